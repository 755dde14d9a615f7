/**
 * What error messages may tell a client about the schema. graphql-js 16 ends validation and coercion messages with
 * "Did you mean …?", naming fields, types, arguments or enum values the caller did not ask for: with introspection
 * off (production), that is the schema leaking one guess at a time. Production servers strip it: the gateway through
 * Apollo Server (`hideSchemaDetailsFromClientErrors`, same pattern), the subgraph server and the gateway's streams here.
 */
const SUGGESTION = / ?Did you mean(.+?)\?$/;

/** The message without graphql-js's trailing "Did you mean …?" suggestion. */
export function withoutSuggestions(message: string): string {
  return message.replace(SUGGESTION, '');
}
