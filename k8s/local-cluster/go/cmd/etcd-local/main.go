// Command etcd-local runs a single-member etcd through go.etcd.io/etcd/server/v3/embed, because
// etcd's server module carries relative replaces that make `go install` refuse it. It serves
// plain HTTP on loopback only: it is the local cluster's store, never a production etcd.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "data directory (required)")
	client := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback)")
	peer := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("etcd-local: --data-dir is required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd-local: bad --listen-client-url: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd-local: bad --listen-peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "local"
	cfg.Dir = *dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	// Test infrastructure: durability across power loss is not worth an fsync per write.
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd-local: start: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd-local: ready on %s", cu.String())
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		log.Fatal("etcd-local: not ready within 60s")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Printf("etcd-local: %v, stopping", s)
		e.Close()
	case err := <-e.Err():
		log.Fatalf("etcd-local: %v", err)
	}
}
