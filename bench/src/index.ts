/** What other tools may reuse from the bench: the queries and the .cpuprofile summariser. */
export { DIRECT_QUERY, GATEWAY_QUERY, TRIVIAL_QUERY } from './lib/queries.js';
export { formatProfile, packageOf, summarizeProfile, type ProfileSummary } from './lib/profile.js';
