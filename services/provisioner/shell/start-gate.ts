/** What lets a scale-out begin its start: a host start slot (a cold start) or a ready warm pool member. */
export type Ticket = "slot" | "member";

/**
 * The provisioner's admission to host starts: a cold start holds one of `limit` slots
 * (`maxConcurrentHostStartups`); a warm pool claim needs a ready member and no slot. Waiters are served
 * with whichever comes first — a member that becomes ready goes to the first waiter that may take one,
 * a freed slot to the first waiter — so a request a member can serve never waits behind cold starts,
 * and cold starts never exceed the slots. Replacements of lost runtimes come first, then arrival order:
 * their runs are late already, a first placement's are not yet (P=20 proof: a replacement waited 22–44 s
 * behind ~20 first placements' cold starts). The member count is a hint (the claim decides): a member
 * ticket whose claim finds nothing falls back to waiting for a slot.
 */
export class StartGate {
  private slots: number;
  private members = 0;
  private readonly waiting: {
    readonly member: boolean;
    readonly replacement: boolean;
    readonly give: (t: Ticket) => void;
  }[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`start slot limit must be a positive integer, got ${limit}`);
    this.slots = limit;
  }

  /** Scale-outs waiting for a slot or a member now. */
  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * A slot, or — when `member` — a ready member if one is known before a slot frees. A `replacement`
   * is served before every first placement waiting.
   */
  acquire(member: boolean, replacement = false): Promise<Ticket> {
    if (member && this.members > 0) {
      this.members--;
      return Promise.resolve("member");
    }
    if (this.slots > 0) {
      this.slots--;
      return Promise.resolve("slot");
    }
    return new Promise((give) => this.waiting.push({ member, replacement, give }));
  }

  releaseSlot(): void {
    const next = this.next(() => true);
    if (next) next.give("slot");
    else this.slots++;
  }

  /** A member became ready (recorded `pool-member-ready`). */
  memberReady(): void {
    const next = this.next((w) => w.member);
    if (next) next.give("member");
    else this.members++;
  }

  /** Takes the waiter served next among those `may`: the first replacement, else the first to arrive. */
  private next(may: (w: { readonly member: boolean }) => boolean) {
    const r = this.waiting.findIndex((w) => w.replacement && may(w));
    const i = r >= 0 ? r : this.waiting.findIndex(may);
    return i >= 0 ? this.waiting.splice(i, 1)[0] : undefined;
  }

  /** A ready member was claimed by a slot holder (no member ticket taken): one fewer known. */
  memberTaken(): void {
    if (this.members > 0) this.members--;
  }
}
