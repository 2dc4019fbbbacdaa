/**
 * Hands out loopback addresses from a /24 inside 127.0.0.0/8 (a node's pod CIDR or the gateway's
 * range, e.g. 127.0.9.0/24 → 127.0.9.1 … 127.0.9.254). Linux routes all of 127.0.0.0/8 to `lo`, so
 * every Pod can bind its own address like in a real cluster. Allocation is round-robin so an address
 * just released (sockets possibly in TIME_WAIT) is the last to be reused.
 */
export class IpPool {
  private readonly prefix: string;
  private readonly used = new Set<string>();
  private next = 1;

  /** Throws unless `cidr` is an a.b.c.0/24. */
  constructor(cidr: string) {
    const m = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(cidr);
    if (!m) throw new Error(`pod CIDR must be a /24 like 127.0.9.0/24, got ${cidr}`);
    this.prefix = m[1] as string;
  }

  /** True when the address belongs to this pool's /24. */
  contains(ip: string): boolean {
    return ip.startsWith(`${this.prefix}.`);
  }

  /** Marks an address as taken (a Pod adopted after a restart keeps its IP). */
  reserve(ip: string): void {
    if (this.contains(ip)) this.used.add(ip);
  }

  release(ip: string): void {
    this.used.delete(ip);
  }

  /** The next free address; throws when all 254 are in use. */
  allocate(): string {
    for (let i = 0; i < 254; i++) {
      const host = ((this.next - 1 + i) % 254) + 1;
      const ip = `${this.prefix}.${host}`;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        this.next = (host % 254) + 1;
        return ip;
      }
    }
    throw new Error(`pod CIDR ${this.prefix}.0/24 is exhausted`);
  }
}
