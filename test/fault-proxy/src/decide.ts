/** Decides what happens to one request: the first matching rule, otherwise the seeded random faults. */
import type { Action, Faults, Rule } from './config.js';
import { mulberry32, requestSeed } from './prng.js';

export interface RequestFacts {
  method: string;
  /** Path without the query string. */
  path: string;
  operationName: string | null;
  /** See requestFingerprint. */
  fingerprint: string;
}

export interface CutPoint {
  afterEvents?: number | undefined;
  afterBytes?: number | undefined;
}

/** The plan for one request. */
export interface Plan {
  /** dropRequest: close the client socket; respond: answer `status` ourselves; forward: send upstream. */
  kind: 'dropRequest' | 'respond' | 'forward';
  status?: number;
  retryAfterSeconds?: number;
  /** Wait this long before forwarding (0 = none). */
  delayMs: number;
  /** After forwarding, read the whole answer and close the client socket instead of answering. */
  dropResponse: boolean;
  /** Cut an SSE answer at this point. */
  cut: CutPoint | null;
  /** `random`, or the name of the rule that decided. */
  by: string;
}

const FORWARD: Omit<Plan, 'by'> = { kind: 'forward', delayMs: 0, dropResponse: false, cut: null };

export function ruleName(rule: Rule, index: number): string {
  return rule.name ?? `rule${index}`;
}

function planFromAction(action: Action, by: string, defaultRetryAfter: number): Plan {
  switch (action.type) {
    case 'pass':
      return { ...FORWARD, by };
    case 'dropRequest':
      return { ...FORWARD, kind: 'dropRequest', by };
    case 'dropResponse':
      return { ...FORWARD, dropResponse: true, by };
    case 'respond':
      return {
        ...FORWARD,
        kind: 'respond',
        status: action.status,
        retryAfterSeconds: action.retryAfterSeconds ?? defaultRetryAfter,
        by,
      };
    case 'delay':
      return { ...FORWARD, delayMs: action.ms, by };
    case 'cutStream':
      return { ...FORWARD, cut: { afterEvents: action.afterEvents, afterBytes: action.afterBytes }, by };
  }
}

/** Draws the random faults for a request from its own seeded generator (three draws, always in this order). */
export function randomPlan(faults: Faults, seed: number, fingerprint: string, occurrence: number): Plan {
  const rng = mulberry32(requestSeed(seed, fingerprint, occurrence));
  const exclusive = rng();
  const delayDraw = rng();
  const cutDraw = rng();
  const plan: Plan = { ...FORWARD, by: 'random' };
  let edge = faults.dropRequest;
  if (exclusive < edge) {
    plan.kind = 'dropRequest';
  } else if (exclusive < (edge += faults.dropResponse)) {
    plan.dropResponse = true;
  } else if (exclusive < (edge += faults.rateLimit)) {
    Object.assign(plan, { kind: 'respond', status: 429, retryAfterSeconds: faults.retryAfterSeconds });
  } else if (exclusive < (edge += faults.unavailable)) {
    Object.assign(plan, { kind: 'respond', status: 503, retryAfterSeconds: faults.retryAfterSeconds });
  }
  if (faults.delay && delayDraw < faults.delay.probability) plan.delayMs = faults.delay.ms;
  if (faults.cutStream && cutDraw < faults.cutStream.probability) {
    plan.cut = { afterEvents: faults.cutStream.afterEvents, afterBytes: faults.cutStream.afterBytes };
  }
  return plan;
}

/** Holds the rules' counters and the per-fingerprint occurrence counts of one proxy. */
export class Decider {
  private readonly matched: number[];
  private readonly fired: number[];
  private readonly occurrences = new Map<string, number>();

  constructor(
    private readonly rules: Rule[],
    public faults: Faults,
    private readonly seed: number,
  ) {
    this.matched = rules.map(() => 0);
    this.fired = rules.map(() => 0);
  }

  decide(facts: RequestFacts): Plan {
    const occurrence = this.occurrences.get(facts.fingerprint) ?? 0;
    this.occurrences.set(facts.fingerprint, occurrence + 1);
    // Every rule counts its matches (so `nth` means the nth matching request, whichever rule fired before).
    const eligible = this.rules.map((rule, index) => {
      if (!this.matches(rule, facts)) return false;
      const nth = ++this.matched[index]!;
      const limit = rule.times ?? (rule.match.nth !== undefined ? 1 : Infinity);
      return (rule.match.nth === undefined || nth >= rule.match.nth) && this.fired[index]! < limit;
    });
    const index = eligible.indexOf(true);
    if (index >= 0) {
      this.fired[index]!++;
      const rule = this.rules[index]!;
      return planFromAction(rule.action, ruleName(rule, index), this.faults.retryAfterSeconds);
    }
    return randomPlan(this.faults, this.seed, facts.fingerprint, occurrence);
  }

  private matches(rule: Rule, facts: RequestFacts): boolean {
    const m = rule.match;
    return (
      (m.method === undefined || m.method.toUpperCase() === facts.method.toUpperCase()) &&
      (m.path === undefined || m.path === facts.path) &&
      (m.operationName === undefined || m.operationName === facts.operationName)
    );
  }
}
