export { startFaultProxy, type FaultProxy, type FaultProxyOptions, type FaultProxyStats } from './proxy.js';
export type { FaultsInput, RuleInput, Action } from './config.js';
export type { Plan, RequestFacts } from './decide.js';
export { mulberry32 } from './prng.js';
