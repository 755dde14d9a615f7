/** The HTML page oidc-provider shows a browser when an authorization request cannot go on (bad client, redirect URI, ...). */
import type { KoaContextWithOIDC } from 'oidc-provider';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export async function renderOAuthError(
  ctx: KoaContextWithOIDC,
  out: { error: string; error_description?: string },
): Promise<void> {
  ctx.type = 'html';
  ctx.set(
    'content-security-policy',
    "default-src 'none'; style-src 'self'; frame-ancestors 'none'; form-action 'self'",
  );
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.body = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in request refused</title><link rel="stylesheet" href="/static/identity.css"></head>
<body><main>
<h1>This sign-in request cannot continue</h1>
<p role="alert"><strong>${escapeHtml(out.error)}</strong>${out.error_description ? `: ${escapeHtml(out.error_description)}` : ''}</p>
<p>Go back to the application and start again. If it keeps happening, tell your administrator the error above.</p>
</main></body></html>`;
}
