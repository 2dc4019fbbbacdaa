import type { EventStore, StreamLayout } from "../../../streams/index.ts";
import { emptyRoster, evolveRoster, type Roster, type RuntimeEvent } from "../domain/runtime-roster.ts";

/**
 * The provisioner's in-memory fold of every runtime event (`<prefix>.runtime.*.*`), caught up on
 * demand from the last sequence it saw. Counting a tenant's runtimes needs the whole roster, not
 * one aggregate; the fold is small (one summary per runtime) and rebuilds from sequence 1 on start.
 */
export class RosterView {
  private roster: Roster = emptyRoster();
  private catching: Promise<Roster> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly layout: StreamLayout,
  ) {}

  /**
   * The roster including every runtime event stored before the call. Concurrent callers share one
   * replay, and a caller arriving during a replay waits for a fresh one (it may need later events).
   * Failure modes: store errors propagate; the roster keeps what it had folded.
   */
  async current(): Promise<Roster> {
    while (this.catching) await this.catching.catch(() => undefined);
    this.catching = this.catchUp();
    try {
      return await this.catching;
    } finally {
      this.catching = undefined;
    }
  }

  private async catchUp(): Promise<Roster> {
    const prefix = `${this.layout.eventPrefix}.runtime.`;
    await this.store.replay(
      { seq: this.roster.lastSeq + 1 },
      (s) => {
        // The filter already limits the replay; the check keeps the fold safe on stores that ignore it.
        if (!s.subject.startsWith(prefix)) return;
        // `<prefix>.runtime.<id>.<event>`: the id is the token after the aggregate name.
        const id = s.subject.slice(prefix.length).split(".")[0] as string;
        this.roster = evolveRoster(this.roster, s.seq, id, s.event as RuntimeEvent);
      },
      // A message that does not decode is no runtime fact: stepped over (capacity and forensics record
      // it as a dead letter), so one bad message can never stop every scale-out.
      { filter: `${prefix}>`, onUndecodable: () => undefined },
    );
    return this.roster;
  }
}
