import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Decider } from "../../contracts/decider.ts";
import { DroverError } from "../../contracts/errors.ts";
import { deciderSpec, thenThrows } from "../support/decider-spec.ts";

// A toy account: enough to exercise every path of the spec helper.
type Cmd = { type: "open"; id: string } | { type: "deposit"; amount: number } | { type: "close" };
type Ev = { type: "opened"; id: string } | { type: "deposited"; amount: number } | { type: "closed" };
type State = { status: "none" | "open" | "closed"; balance: number; ids: Set<string> };

const account: Decider<Cmd, Ev, State> = {
  initialState: () => ({ status: "none", balance: 0, ids: new Set() }),
  decide(c, s) {
    switch (c.type) {
      case "open":
        return s.status === "none" ? [{ type: "opened", id: c.id }] : [];
      case "deposit":
        if (s.status !== "open") throw new DroverError("not-found", "no open account");
        if (c.amount <= 0) throw new DroverError("contract-violation", "amount must be positive");
        return [{ type: "deposited", amount: c.amount }];
      case "close":
        return s.status === "open" ? [{ type: "closed" }] : [];
      default: {
        const never: never = c;
        throw new Error(`unknown command ${JSON.stringify(never)}`);
      }
    }
  },
  evolve(s, e) {
    switch (e.type) {
      case "opened":
        return { ...s, status: "open", ids: new Set([...s.ids, e.id]) };
      case "deposited":
        return { ...s, balance: s.balance + e.amount };
      case "closed":
        return { ...s, status: "closed" };
      default: {
        const never: never = e;
        throw new Error(`unknown event ${JSON.stringify(never)}`);
      }
    }
  },
};
const spec = deciderSpec(account);

describe("decider spec helper (given/when/then over decide/evolve, no transport)", () => {
  it("proves a decision from prior events with no transport: only decide/evolve run, in memory", () => {
    const after = spec
      .given([
        { type: "opened", id: "a" },
        { type: "deposited", amount: 5 },
      ])
      .when({ type: "deposit", amount: 3 })
      .then([{ type: "deposited", amount: 3 }]);
    expect(after.balance).toBe(8);
    const source = readFileSync(new URL("../support/decider-spec.ts", import.meta.url), "utf8");
    const imports = [...source.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    expect(imports.sort()).toEqual(["../../contracts/decider.ts", "../../contracts/errors.ts", "vitest"]);
  });

  it("asserts an idempotent no-op as no events", () => {
    spec
      .given([{ type: "opened", id: "a" }])
      .when({ type: "open", id: "a" })
      .then([]);
  });

  it("asserts a refusal by its catalogued code, either form", () => {
    spec.given([]).when({ type: "deposit", amount: 1 }).then(thenThrows("not-found"));
    spec
      .given([{ type: "opened", id: "a" }])
      .when({ type: "deposit", amount: -1 })
      .thenThrows("contract-violation", /positive/);
  });

  it("fails when the decided events differ from the expected ones", () => {
    expect(() =>
      spec
        .given([{ type: "opened", id: "a" }])
        .when({ type: "deposit", amount: 3 })
        .then([{ type: "deposited", amount: 4 }]),
    ).toThrow();
  });

  it("fails when a refusal was expected but decide returned events, or refused with another code", () => {
    expect(() =>
      spec
        .given([{ type: "opened", id: "a" }])
        .when({ type: "deposit", amount: 3 })
        .thenThrows("not-found"),
    ).toThrow(/expected decide to refuse with not-found, but it returned \[\{"type":"deposited","amount":3\}\]/);
    expect(() => spec.given([]).when({ type: "deposit", amount: 1 }).thenThrows("forbidden")).toThrow(/wrong code/);
  });

  it("fails when decide mutates the state it is given", () => {
    const mutating: Decider<Cmd, Ev, State> = {
      ...account,
      decide(c, s) {
        s.balance += 1;
        return account.decide(c, s);
      },
    };
    expect(() =>
      deciderSpec(mutating)
        .given([{ type: "opened", id: "a" }])
        .when({ type: "close" })
        .then([{ type: "closed" }]),
    ).toThrow(/mutated the state/);
  });

  it("fails when decide is not deterministic", () => {
    let n = 0;
    const drifting: Decider<Cmd, Ev, State> = { ...account, decide: () => [{ type: "deposited", amount: ++n }] };
    expect(() =>
      deciderSpec(drifting)
        .given([])
        .when({ type: "close" })
        .then([{ type: "deposited", amount: 1 }]),
    ).toThrow(/not deterministic/);
  });

  it("fails when decide throws something other than a DroverError", () => {
    const crashing: Decider<Cmd, Ev, State> = {
      ...account,
      decide: () => {
        throw new TypeError("boom");
      },
    };
    expect(() => deciderSpec(crashing).given([]).when({ type: "close" }).thenThrows("not-found")).toThrow(
      /non-DroverError/,
    );
  });
});
