/**
 * A refused intent call shown with its code and, for FORBIDDEN, the reason the server gives in
 * `extensions.reason` (DEVICE_NOT_ENROLLED, REMOTE_ACTIONS_DISABLED), with advice for that reason: the generic
 * advice of a code ("your role does not allow this") would send the person the wrong way.
 */
import { AgentGraphError } from '@agentgraph/sdk';
import { problemOf } from '../../api.js';

export function refusalReason(err: unknown): string | undefined {
  if (!(err instanceof AgentGraphError)) return undefined;
  const reason = err.errors[0]?.extensions?.['reason'];
  return typeof reason === 'string' ? reason : undefined;
}

const BY_REASON: Record<string, { title: string; advice: string }> = {
  REMOTE_ACTIONS_DISABLED: {
    title: 'Refused: remote actions are off on this device',
    advice:
      "Ask the device's local user to switch remote actions on in the desktop app (the console cannot), then create the intent again.",
  },
  DEVICE_NOT_ENROLLED: {
    title: 'Refused: the device is not enrolled',
    advice:
      'Intents go only to ENROLLED devices. Approve its enrolment on the Devices page, or choose another device.',
  },
};

const BY_CODE: Record<string, string> = {
  EMERGENCY_STOP: 'Refused: the emergency stop is engaged, so no intent can be created',
  RATE_LIMITED: 'Refused: too many intents in a short time',
  BAD_USER_INPUT: 'Refused: a value is outside what the server accepts',
  FORBIDDEN: 'Refused: you may not do this',
};

/** Like ProblemNotice (role=alert: code, message, what to do, correlation id), with the refusal's reason. */
export function RefusalNotice({ error, fallbackTitle }: { error: unknown; fallbackTitle: string }) {
  if (!error) return null;
  const p = problemOf(error);
  const reason = refusalReason(error);
  const specific = reason ? BY_REASON[reason] : undefined;
  return (
    <div class="problem" role="alert">
      <p class="problem-title">
        <strong>{specific?.title ?? BY_CODE[p.code] ?? fallbackTitle}</strong>{' '}
        <code class="code">{p.code}</code>
        {reason ? (
          <>
            {' '}
            <code class="code">{reason}</code>
          </>
        ) : null}
      </p>
      <p>{p.message}</p>
      <p class="advice">What to do: {specific?.advice ?? p.advice}</p>
      {p.correlationId ? <p class="muted">Correlation id: {p.correlationId}</p> : null}
    </div>
  );
}
