import { describe, expect, it } from "vitest";
import { EgressSettings, parseEgressRule, type EgressRule } from "../../../contracts/index.ts";
import { classifyAddress, egressDecision } from "./egress-policy.ts";

const rules = (...entries: string[]): EgressRule[] => entries.map((e) => parseEgressRule(e) as EgressRule);

describe("egress address classifier (pure: proves no transport)", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::a9fe:a9fe", "link-local"],
    ["fd00:ec2::254", "unique-local"],
    ["fc00::1", "unique-local"],
    ["100.100.100.200", "carrier-grade-nat"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["::7f00:1", "special-purpose"],
    ["64:ff9b::a00:1", "special-purpose"],
    ["2002:a00:1::", "special-purpose"],
    ["192.0.2.1", "special-purpose"],
    ["not-an-ip", "not-an-address"],
  ])("classes %s as %s", (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });

  it.each(["93.184.215.14", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])(
    "classes %s as public",
    (address) => {
      expect(classifyAddress(address)).toBe("public");
    },
  );
});

describe("egress decision (pure: proves no transport)", () => {
  const t = (host: string, port: number, address: string) => ({ host, port, address });

  it("allows a public address without any rule and refuses every special-purpose address by default", () => {
    expect(egressDecision([], t("example.com", 443, "93.184.215.14"))).toEqual({ allowed: true, by: "public" });
    expect(egressDecision([], t("localhost", 80, "127.0.0.1"))).toEqual({ allowed: false, addressClass: "loopback" });
    expect(egressDecision([], t("169.254.169.254", 80, "169.254.169.254"))).toEqual({
      allowed: false,
      addressClass: "link-local",
    });
  });

  it("a host rule names the URL's host (any port, or only its port); an address rule the resolved address", () => {
    expect(egressDecision(rules("localhost"), t("localhost", 9, "127.0.0.1")).allowed).toBe(true);
    expect(egressDecision(rules("localhost:8080"), t("localhost", 8080, "::1")).allowed).toBe(true);
    expect(egressDecision(rules("localhost:8080"), t("localhost", 8081, "127.0.0.1")).allowed).toBe(false);
    // An address rule covers any name resolving to it; a name rule does not cover other names.
    expect(egressDecision(rules("127.0.0.1"), t("localhost", 80, "127.0.0.1")).allowed).toBe(true);
    expect(egressDecision(rules("internal.example"), t("localhost", 80, "127.0.0.1")).allowed).toBe(false);
    expect(egressDecision(rules("10.0.0.0/8"), t("db.internal", 5432, "10.9.8.7")).allowed).toBe(true);
    expect(egressDecision(rules("10.0.0.0/8"), t("meta", 80, "169.254.169.254")).allowed).toBe(false);
    expect(egressDecision(rules("[::1]:8080"), t("::1", 8080, "::1")).allowed).toBe(true);
    expect(egressDecision(rules("127.0.0.1:8080"), t("127.0.0.1", 8081, "127.0.0.1")).allowed).toBe(false);
    // An IPv4 rule covers the IPv4-mapped form of its address.
    expect(egressDecision(rules("127.0.0.1"), t("x", 80, "::ffff:127.0.0.1")).allowed).toBe(true);
  });

  it("tenant settings refuse malformed allow entries and default the response cap to 5 MiB", () => {
    expect(EgressSettings.parse({})).toEqual({ allow: [], maxResponseBytes: 5 * 1024 * 1024 });
    for (const bad of ["http://x", "host:0", "host:70000", "10.0.0.0/33", "a b", "[zz]:80", ""])
      expect(EgressSettings.safeParse({ allow: [bad] }).success, bad).toBe(false);
    for (const good of ["api.example.com", "api.example.com:8443", "10.0.0.0/8", "fd00::/8", "[::1]:80", "127.0.0.1:9"])
      expect(EgressSettings.safeParse({ allow: [good] }).success, good).toBe(true);
  });
});
