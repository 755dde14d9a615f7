"""Builds corpus.json, the labelled secret-filter corpus (README.md here): `/usr/bin/python3 build_corpus.py`.

Every value is made up: documentation examples (AWS's EXAMPLE keys, the card networks' published test numbers) or
format-valid bodies drawn from a seeded generator, so the file is the same on every run. Never put a real
credential here. Each case says where its format comes from (a gitleaks rule id, a detect-secrets plugin, or the
issue) and why it is labelled as it is.
"""
from __future__ import annotations

import base64
import json
import random
from pathlib import Path

rng = random.Random(20261202)

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "_-"
HEX = "0123456789abcdef"
AWS_ID = UPPER + "234567"


def tok(n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64(n_bytes: int) -> str:
    return base64.b64encode(bytes(rng.randrange(256) for _ in range(n_bytes))).decode()


cases: list[dict] = []


def secret(value: str, detector: str, source: str, why: str = "", data_class: str = "SECRET") -> None:
    cases.append({"value": value, "label": "secret", "class": data_class, "detector": detector, "source": source,
                  "why": why})


def harmless(value: str, source: str, why: str) -> None:
    cases.append({"value": value, "label": "harmless", "source": source, "why": why})


# ---- api-key: prefix-anchored provider tokens (gitleaks rules) ------------------------------------------------
secret("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "api-key", "gitleaks aws-access-token", "AWS's documentation key id")
secret(f"export AWS_ACCESS_KEY_ID=ASIA{tok(16, AWS_ID)}", "api-key", "gitleaks aws-access-token", "temporary (STS) key id")
secret(f"the deploy user's key is AKIA{tok(16, AWS_ID)}, rotate it", "api-key", "gitleaks aws-access-token")
secret(f"GITHUB_TOKEN=ghp_{tok(36)}", "api-key", "gitleaks github-pat")
secret(f"oauth token gho_{tok(36)} from the app", "api-key", "gitleaks github-oauth")
secret(f'{{"token": "ghs_{tok(36)}"}}', "api-key", "gitleaks github-app-token")
secret(f"refresh with ghr_{tok(36)}", "api-key", "gitleaks github-refresh-token")
secret(f"ghu_{tok(36)}", "api-key", "gitleaks github-app-token")
secret(f"git clone with github_pat_11{tok(20, UPPER + DIGITS)}_{tok(59)}", "api-key", "gitleaks github-fine-grained-pat")
secret(f"GITLAB_TOKEN: glpat-{tok(20, ALNUM + '_-')}", "api-key", "gitleaks gitlab-pat")
secret(f"slack bot xoxb-{tok(12, DIGITS)}-{tok(13, DIGITS)}-{tok(24)}", "api-key", "gitleaks slack-bot-token")
secret(f"xoxp-{tok(12, DIGITS)}-{tok(12, DIGITS)}-{tok(13, DIGITS)}-{tok(32, HEX)}", "api-key",
       "gitleaks slack-user-token")
secret(f"POST https://hooks.slack.com/services/T{tok(8, UPPER + DIGITS)}/B{tok(10, UPPER + DIGITS)}/{tok(24)}",
       "api-key", "gitleaks slack-webhook-url")
secret(f"webhook: https://hooks.slack.com/workflows/T{tok(8, UPPER + DIGITS)}/A{tok(10, UPPER + DIGITS)}/{tok(18, DIGITS)}/{tok(24)}",
       "api-key", "gitleaks slack-webhook-url")
secret(f"STRIPE_SECRET_KEY=sk_live_51{tok(22)}{tok(24)}", "api-key", "gitleaks stripe-access-token")
secret(f"stripe.api_key = 'sk_test_{tok(24)}'", "api-key", "gitleaks stripe-access-token")
secret(f"restricted key rk_live_{tok(24)} for the reporting job", "api-key", "gitleaks stripe-access-token")
secret(f"OPENAI_API_KEY=sk-proj-{tok(64, ALNUM + '_-')}", "api-key", "gitleaks openai-api-key")
secret(f"openai key sk-{tok(20)}T3BlbkFJ{tok(20)}", "api-key", "gitleaks openai-api-key (legacy form)")
secret(f"ANTHROPIC_API_KEY=sk-ant-api03-{tok(93, ALNUM + '_-')}AA", "api-key", "gitleaks anthropic-api-key")
secret(f"maps: AIza{tok(35, ALNUM + '_-')}", "api-key", "gitleaks gcp-api-key")
secret(f'"apiKey": "AIza{tok(35, ALNUM + "_-")}",', "api-key", "gitleaks gcp-api-key", "firebase config")
secret(f"//registry.npmjs.org/:_authToken=npm_{tok(36)}", "api-key", "gitleaks npm-access-token", ".npmrc line")
secret(f"password = pypi-AgEIcHlwaS5vcmc{tok(70, B64URL)}", "api-key", "gitleaks pypi-upload-token", ".pypirc")
secret(f"SENDGRID_API_KEY=SG.{tok(22, B64URL)}.{tok(43, B64URL)}", "api-key", "gitleaks sendgrid-api-token")
secret(f"shopify admin shpat_{tok(32, HEX)}", "api-key", "gitleaks shopify-access-token")
secret(f"DIGITALOCEAN_TOKEN=dop_v1_{tok(64, HEX)}", "api-key", "gitleaks digitalocean-pat")
secret(f"VAULT_TOKEN=hvs.{tok(90, ALNUM + '_-')}", "api-key", "gitleaks vault-service-token")
secret(f"huggingface-cli login --token hf_{tok(34, UPPER + LOWER)}", "api-key", "gitleaks huggingface-access-token")
secret(f"databricks token dapi{tok(32, HEX)}", "api-key", "gitleaks databricks-api-token")
secret(f"postman PMAK-{tok(24, HEX)}-{tok(34, HEX)}", "api-key", "gitleaks postman-api-token")
secret(f"LINEAR_API_KEY=lin_api_{tok(40)}", "api-key", "gitleaks linear-api-key")
secret(f"DOPPLER_TOKEN=dp.pt.{tok(43)}", "api-key", "gitleaks doppler-api-token")
secret(f"# age key\nAGE-SECRET-KEY-1{tok(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}", "api-key", "gitleaks age-secret-key")
secret(f"square sq0atp-{tok(22, ALNUM + '_-')}", "api-key", "gitleaks square-access-token")
secret(f"https://discord.com/api/webhooks/{tok(18, DIGITS)}/{tok(68, ALNUM + '_-')}", "api-key",
       "gitleaks discord-webhook (detect-secrets DiscordBotTokenDetector family)")

# ---- pem-private-key ---------------------------------------------------------------------------------------------
for kind in ["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED ", "DSA "]:
    secret(f"-----BEGIN {kind}PRIVATE KEY-----\n{b64(48)}\n{b64(48)}\n-----END {kind}PRIVATE KEY-----",
           "pem-private-key", "gitleaks private-key / detect-secrets PrivateKeyDetector")

# ---- jwt -------------------------------------------------------------------------------------------------------------
def jwt_part(obj: str) -> str:
    return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")


secret("session " + jwt_part('{"alg":"HS256","typ":"JWT"}') + "." + jwt_part('{"sub":"1234567890","name":"Ann"}')
       + "." + tok(43, B64URL), "jwt", "gitleaks jwt / detect-secrets JwtTokenDetector")
secret(jwt_part('{"alg":"ES256","kid":"k1"}') + "." + jwt_part('{"iss":"https://id.example","exp":1764417600}') + "."
       + tok(86, B64URL), "jwt", "gitleaks jwt")
secret("unsigned " + jwt_part('{"alg":"none"}') + "." + jwt_part('{"sub":"admin","role":"root"}') + ".", "jwt",
       "gitleaks jwt", "an unsigned token still grants what its claims say to a lax verifier")
secret('{"id_token":"' + jwt_part('{"alg":"RS256","typ":"JWT"}') + "." + jwt_part('{"aud":"web","sub":"u-42"}') + "."
       + tok(342, B64URL) + '"}', "jwt", "gitleaks jwt")

# ---- bearer-token ------------------------------------------------------------------------------------------------
secret(f"Authorization: Bearer {tok(40)}", "bearer-token", "gitleaks generic (authorization header)")
secret(f'curl -H "authorization: bearer {tok(32, ALNUM + "._-")}" https://api.example.com', "bearer-token",
       "gitleaks curl-auth-header")
secret(f"BEARER {tok(24, ALNUM + '~+/')}==", "bearer-token", "RFC 6750 token68")
secret("Authorization: Basic " + base64.b64encode(b"deploy:Tr0ub4dor-3x").decode(), "bearer-token",
       "detect-secrets BasicAuthDetector (header form)")
secret('headers = {"Authorization": "Basic ' + base64.b64encode(b"svc-backup:" + tok(16).encode()).decode() + '"}',
       "bearer-token", "gitleaks curl-auth-header (basic)")

# ---- url-password --------------------------------------------------------------------------------------------------
secret("redis://:password@host", "url-password", "issue 18 item 3 (a known miss: empty user)")
secret(f"REDIS_URL=redis://:{tok(20)}@cache.internal:6379/0", "url-password", "detect-secrets BasicAuthDetector",
       "empty user")
secret("db at postgres://app:hunter2pass@db.internal:5432/main", "url-password", "detect-secrets BasicAuthDetector")
secret("mongodb+srv://admin:Sup3r-S3cret!@cluster0.example.net/test", "url-password", "detect-secrets BasicAuthDetector")
secret(f"DATABASE_URL=mysql://root:{tok(16)}@127.0.0.1:3306/shop", "url-password", "detect-secrets BasicAuthDetector")
secret(f"amqp://guest:{tok(12)}@rabbit:5672/%2F", "url-password", "detect-secrets BasicAuthDetector")
secret(f"git remote add origin https://oauth2:{tok(20, ALNUM + '_-')}@gitlab.example.com/group/repo.git",
       "url-password", "gitleaks generic (credentials in URL)")
secret("ftp://backup:letmein2024@files.example.org/dumps/", "url-password", "detect-secrets BasicAuthDetector")
secret("smtp://mailer:Wint3r!sComing@smtp.example.com:587", "url-password", "detect-secrets BasicAuthDetector")
secret("postgresql://user:password@localhost/app", "url-password", "detect-secrets BasicAuthDetector",
       "a literal 'password' is still a password in a URL (the issue's redis case)")

# ---- password-assignment -------------------------------------------------------------------------------------------
secret("password: s3cr3t-Pa55", "password-assignment", "issue 18 item 3 (a known miss: YAML password: value)")
secret("database:\n  host: db.internal\n  user: app\n  password: Rainy-Day-42\n", "password-assignment",
       "detect-secrets KeywordDetector (YAML)")
secret("DB_PASSWORD=correcthorsebattery", "password-assignment", "detect-secrets KeywordDetector (.env)")
secret('{"username": "ops", "password": "hunter2!"}', "password-assignment", "detect-secrets KeywordDetector (JSON)")
secret("Server=db;Database=app;User Id=sa;Password=Pa55w0rd!;", "password-assignment",
       "ADO.NET connection string (gitleaks generic)")
secret("host=db user=app password=correcthorse dbname=main", "password-assignment", "libpq connection string")
secret("Data Source=x;pwd=letmein42", "password-assignment", "ODBC connection string")
secret("  MYSQL_ROOT_PASSWORD: tiger-lily-77", "password-assignment", "docker-compose environment (KeywordDetector)")
secret(f"POSTGRES_PASSWORD={tok(18)}", "password-assignment", "detect-secrets KeywordDetector")
secret("spring.datasource.password=Spr1ngT1me", "password-assignment", "Java properties (KeywordDetector)")
secret("password = 'blue-whale-9'", "password-assignment", "Python assignment (KeywordDetector)")
secret("const cfg = { user: 'app', password: 'qwerty-uiop-1', port: 5432 }", "password-assignment",
       "JS object literal (KeywordDetector)")
secret("mysql -u root --password=Gr33nTea db", "password-assignment", "command line flag")
secret('ssh_key_passphrase: "correct horse battery staple"', "password-assignment", "detect-secrets KeywordDetector",
       "a quoted passphrase with spaces (unquoted, words after `:` read as prose)")
secret("REDIS_PASS=orangeJuice7", "password-assignment", "detect-secrets KeywordDetector (_pass)")
secret("ansible_become_pass: R00tMe!", "password-assignment", "detect-secrets KeywordDetector (_pass)")
secret("jdbc:postgresql://db:5432/app?user=app&password=Qz8-vault-off", "password-assignment",
       "JDBC URL query string")
secret("PGPASSWORD=pgpass1234 psql -h db -U app", "password-assignment", "detect-secrets KeywordDetector")
secret("Password: Tr0ub4dor3", "password-assignment", "detect-secrets KeywordDetector (a note)")
secret("wifi passwd => 'sunflower-2020'", "password-assignment", "detect-secrets KeywordDetector (=>)")
secret("$db_password := \"S0lid-Rock\"", "password-assignment", "detect-secrets KeywordDetector (:=)")
secret("smtp_password: \"mail-2-you\"", "password-assignment", "detect-secrets KeywordDetector")
secret("<add key=\"x\" />\npassword=Winter2025!", "password-assignment", "INI/properties")
secret("[client]\nuser=backup\npassword=b4ckup-n1ght\n", "password-assignment", "my.cnf (KeywordDetector)")

# ---- high-entropy: generated values next to a secret keyword ---------------------------------------------------------
secret("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "high-entropy",
       "gitleaks aws-secret (keyword + 40 base64)", "AWS's documentation secret key")
secret(f"AWS_SECRET_ACCESS_KEY={b64(30)}", "high-entropy", "gitleaks generic-api-key")
secret(f"client_secret: {tok(32)}", "high-entropy", "gitleaks generic-api-key")
secret(f'"client_secret": "{tok(40, ALNUM + "_-")}"', "high-entropy", "gitleaks generic-api-key")
secret(f"api_key = \"{tok(32, HEX)}\"", "high-entropy", "gitleaks generic-api-key", "hex API keys (Datadog, Mailgun…)")
secret(f"x-api-key: {tok(40)}", "high-entropy", "gitleaks generic-api-key (header)")
secret(f'{{"accessToken":"{tok(64, ALNUM + "._-")}","expiresIn":3600}}', "high-entropy", "gitleaks generic-api-key")
secret(f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={b64(64)};EndpointSuffix=core.windows.net",
       "high-entropy", "gitleaks azure-storage-account-key")
secret(f"webhook_secret: whsec_{tok(32)}", "high-entropy", "gitleaks generic-api-key")
secret(f"ENCRYPTION_KEY={b64(32)}", "high-entropy", "gitleaks generic-api-key")
secret(f"api token {tok(40)}", "high-entropy", "gitleaks generic-api-key (prose form)")
secret(f"secret = '{tok(64, HEX)}'", "high-entropy", "gitleaks generic-api-key (hex)")
secret(f"TWILIO_AUTH_TOKEN={tok(32, HEX)}", "high-entropy", "gitleaks twilio (keyword + 32 hex)")
secret(f"DATADOG_API_KEY={tok(32, HEX)}", "high-entropy", "gitleaks datadog-access-token")
secret(f"MAILGUN_API_KEY=key-{tok(32, HEX)}", "high-entropy", "gitleaks mailgun-private-api-token")
secret(f"CLOUDFLARE_API_TOKEN={tok(40, ALNUM + '_-')}", "high-entropy", "gitleaks cloudflare-api-key")
secret(f"refresh_token: 1//0g{tok(96, ALNUM + '_-')}", "high-entropy", "gitleaks gcp refresh token (keyword)")
secret(f"SECRET_KEY_BASE={tok(128, HEX)}", "high-entropy", "Rails secret (gitleaks generic-api-key)")
secret(f"credentials: {tok(48, B64)}", "high-entropy", "gitleaks generic-api-key")
secret(f"auth: {tok(36)}", "high-entropy", "gitleaks generic-api-key")
secret(f"sentry auth token = {tok(64, HEX)}", "high-entropy", "gitleaks sentry-access-token (keyword)")
secret(f"HEROKU_API_KEY=2a0b8f47-1c3e-4d5a-9b6c-7e8f9a0b1c2d", "high-entropy", "gitleaks heroku-api-key",
       "a UUID after a key keyword: a known miss on purpose (UUIDs are ids far more often than keys)")
secret(f"telegram bot token: {tok(10, DIGITS)}:AA{tok(33, ALNUM + '_-')}", "api-key",
       "gitleaks telegram-bot-api-token", "bot id, ':AA' and 33 characters")
secret(f"const apiKey = '{tok(39, ALNUM)}';", "high-entropy", "gitleaks generic-api-key (camel case)")
secret(f"SESSION_SECRET={tok(48, B64URL)}", "high-entropy", "gitleaks generic-api-key")

# ---- card-number (published test numbers) and ssn ----------------------------------------------------------------
for v in ["card 4111 1111 1111 1111 exp 12/29", "visa 4012888888881881", "amex 3782 822463 10005",
          "mc 5555-5555-5555-4444", "5105105105105100", "discover 6011 0009 9013 9424", "jcb 3530111333300000",
          "diners 30569309025904", "unionpay 6200000000000005", "mastercard 2223003122003222",
          '{"pan": "4242424242424242", "cvc": "123"}']:
    secret(v, "card-number", "detect-secrets / PCI test numbers (Luhn-valid)")
for v in ["SSN: 123-45-6789", "ssn 078-05-1120 on file", '{"ssn": "412-68-3391"}', "employee 219-09-9999",
          "tax id 536-22-1845."]:
    secret(v, "ssn", "personal data: US SSN, issued ranges", "PERSONAL, not SECRET", data_class="PERSONAL")

# ---- harmless: the false positives --------------------------------------------------------------------------
png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(rng.randrange(256) for _ in range(180))).decode()
harmless(f"![logo](data:image/png;base64,{png})", "issue 18 item 3", "base64 PNG data URI")
png2 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(90))).decode()
harmless(f'<img src="data:image/png;base64,{png2}">',
         "issue 18 item 3", "base64 PNG data URI in HTML")
for text in [b"The quarterly report is attached; numbers are up 12% on last year.",
             b"Remember to water the plants on Tuesday and Friday mornings, please!",
             b"Meeting notes: agreed on the roadmap, Q3 launch, hiring two engineers."]:
    harmless(base64.b64encode(text).decode(), "issue 18 item 3", "base64 of English prose")
harmless("pk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "issue 18 item 3", "Stripe publishable key (public)")
harmless(f"publishable_key: pk_test_{tok(24)}", "issue 18 item 3", "Stripe publishable key after a key keyword")
harmless("pod api-server-7d9f8b6c5d-x2k4p restarted 3 times", "issue 18 item 3", "Kubernetes pod name")
harmless("kubectl logs payments-worker-6c9f7d8b5-qz2lm -n prod", "issue 18 item 3", "Kubernetes pod name")
harmless("fixed in https://github.com/OctoCat/Hello-World/commit/9fceb02d0ae598e95dc970b74767f19372d61af8",
         "issue 18 item 3", "GitHub commit URL")
harmless("see https://github.com/Acme/WidgetServer2/pull/4821/commits/7b3e9a1c4d5f6a8b9c0d1e2f3a4b5c6d7e8f9a0b",
         "issue 18 item 3", "GitHub PR commit URL")
harmless("/usr/local/lib/node_modules/typescript/lib/tsc.js", "issue 18 item 3", "a file path")
harmless("C:/Users/Build/AppData/Local/Temp/ArtifactCache2024/x86_64/libCrypto3Provider.dll", "issue 18 item 3",
         "a Windows path")
harmless("/var/lib/kubelet/pods/4f9a2c1e/volumes/kubernetes.io~projected/kube-api-access-9x7bq", "issue 18 item 3",
         "a kubelet path")
harmless("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "issue 18 item 3", "a lone JWT header (no payload)")
harmless("the header eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0 names the key", "issue 18 item 3",
         "a lone JWT header in prose")
harmless("Password=${DB_PASSWORD}", "issue 18 item 3", "a placeholder")

# ---- harmless: placeholders, references, masks -------------------------------------------------------------------
for v in ["password: ${DB_PASSWORD}", "DB_PASSWORD=$DB_PASSWORD", 'password: "{{ .Values.db.password }}"',
          "password: <your-password>", "password: ********", "password: null", "password: ''",
          "PASSWORD_FILE=/run/secrets/db_password", "PWD=/home/alice/projects", "password: process.env.DB_PASSWORD",
          "password=os.getenv(\"DB_PASSWORD\")", "password: !vault |", "password: %(db_password)s",
          "smtp_password: changeme", "password: DB_PASSWORD", "password_min_length: 12",
          "password: required", "postgres://app:${PGPASSWORD}@db:5432/app", "redis://:****@cache:6379",
          "token: ${GITHUB_TOKEN}", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}", "api_key: $OPENAI_API_KEY",
          "secret_key: ENV['SECRET_KEY_BASE']", "secretKeyRef: {name: app-secrets, key: DATABASE_URL}",
          "password: #{db_password}", "-p $MYSQL_PWD", "Password={0};"]:
    harmless(v, "detect-secrets KeywordDetector false-positive filters", "placeholder, reference or mask")

# ---- harmless: docs and prose mentioning passwords, tokens, keys ----------------------------------------------------
for v in ["the password is stored in the vault, ask ops", "Reset your password: click the link we sent you",
          "Password must be at least 12 characters and contain a digit", "Forgot password? Use the reset flow.",
          "password: see the 1Password entry 'prod-db'", "Change the password with `passwd` on the host",
          "set PGPASSWORD in the environment, never in the file", "Your password: never share it with anyone",
          "The access token expires after 3600 seconds", "token_type: Bearer", "Bearer token goes in the header",
          "bearer of bad news", "key: user_profile_v2", "sort_key = createdAt", "secretName: db-credentials-prod",
          "api_key_header: X-API-Key", "auth: required", "keyId: 2024-05-rotation-key",
          "tokenizer: bert-base-uncased", "primary key (tenant_id, id)", "the secret sauce is caching",
          "token_endpoint: https://auth.example.com/oauth/token", "Authorization header missing",
          "WWW-Authenticate: Basic realm=\"api\"", 'curl -H "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE" https://api.example.com', "basic authentication is disabled", "keyboard shortcut Ctrl+K",
          '{"token_type":"Bearer","expires_in":3600,"scope":"read write"}', '"secret": false',
          "idempotency_key: 3f2b8c4e-9d1a-4f6b-8e2c-7a5d9b1c3e4f", "AKIA is how AWS key ids start",
          "ghp_ is the prefix of a GitHub token", "sk-learn is a library; sk-short", "password reset tokens expire in 1 h",
          "rotate the signing key every 90 days", "secret rotation: monthly", "cache key format is user:<id>:profile",
          "public_key: MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE" + tok(60, B64) + "==",
          "publicKey = 'BPz" + tok(84, B64URL) + "'",
          "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + tok(43, B64) + " alice@laptop",
          "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
          "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----"]:
    harmless(v, "detect-secrets KeywordDetector / gitleaks generic-api-key allowlist", "docs or prose, no secret")

# ---- harmless: hashes, ids, digests --------------------------------------------------------------------------------
for v in ["sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
          "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it", "md5 d41d8cd98f00b204e9800998ecf8427e",
          "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR9TzL3GGnZfN3UrQ==",
          "image sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4",
          "ghcr.io/acme/api@sha256:" + tok(64, HEX),
          "golang.org/x/text v0.14.0 h1:" + b64(32),
          "$2b$12$" + tok(53, ALNUM + "./") + " is the stored bcrypt hash",
          "request 3f2b8a9c-1d4e-4f6a-9b2c-7e8d9f0a1b2c failed", "id 550E8400-E29B-41D4-A716-446655440000",
          "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
          "etag: \"33a64df551425fcc55e4d42a148795d9f25f89d4\"", "ulid 01HF7YAT00T7Q8Y1K4R3W5Z9XB",
          "ami-0abcdef1234567890 in sg-0123456789abcdef0", "arn:aws:iam::123456789012:role/deploy",
          "i-0a1b2c3d4e5f67890 stopped", "ksuid 0ujsswThIGTUYm2K8FjOOfXtY1K",
          "mongo ObjectId(\"507f1f77bcf86cd799439011\")", "nanoid V1StGXR8_Z5jdHi6B-myT"]:
    harmless(v, "gitleaks allowlist (hashes, ids)", "hash, digest or identifier")

# ---- harmless: base64 media, minified code, identifiers ----------------------------------------------------------
harmless("data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(rng.randrange(256) for _ in range(150))).decode(),
         "gitleaks allowlist", "base64 JPEG data URI")
harmless("data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "gitleaks allowlist",
         "1x1 GIF")
harmless("background: url(data:image/svg+xml;base64," + base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><path d="M8 0L16 16H0z" fill="#09f"/></svg>').decode() + ")",
         "gitleaks allowlist", "SVG data URI in CSS")
harmless("data:font/woff2;base64," + b64(120), "gitleaks allowlist", "font data URI")
harmless("attachment (base64): " + b64(96), "detect-secrets Base64HighEntropyString (no keyword)",
         "random-looking base64 with no keyword near it")
harmless("!function(e,t){var n=t(12),r=n(4),o=e.exports=function(a,b){return r(a)+b};o.v2=n(7)}(module,require);",
         "minified JS", "minified code")
harmless("main.7f3a9c2b.js static/js/2.8e4f1b9c.chunk.js runtime-9a8b7c6d5e4f3a2b.js", "webpack output",
         "hashed bundle names")
harmless('<div class="_button_1x7qk_23 css-1k9ek97 sc-bdVaJa kGxQpe">', "CSS modules", "generated class names")
harmless("getUserAccountSettingsFromRemoteConfiguration", "identifier", "camel case")
harmless("internationalizationAndLocalizationFramework", "identifier", "camel case")
harmless("ThisIsAVeryLongCamelCaseIdentifier2024", "identifier", "camel case with a year")
harmless("the_quick_brown_fox_jumps_over_the_lazy_dog", "identifier", "snake case")
harmless("sha256WithRSAEncryption and utf8mb4_unicode_ci", "identifier", "algorithm and collation names")
harmless("version 1.2.3-beta.4+build.567", "semver", "version string")
harmless("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "low entropy", "repeated character")
harmless("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEf", "low structure", "alphabet sequence, no keyword")

# ---- harmless: URLs, ports, emails ---------------------------------------------------------------------------------
for v in ["http://localhost:8080/api/v1/health", "https://example.com:8443/path?x=1&y=2", "postgres://db.internal:5432/app",
          "redis://cache:6379/0", "https://user@example.com/", "ssh://git@github.com:22/org/repo.git",
          "git@github.com:acme/widgets.git", "mailto:someone@example.com",
          "mongodb://mongo1:27017,mongo2:27017/?replicaSet=rs0", "https://example.com/user:name@x",
          "http://[::1]:3000/", "ftp://files.example.org/pub/", "https://api.example.com/v2/items?page=3&per_page=50",
          "amqp://rabbit:5672/%2F", "jdbc:postgresql://db:5432/app?user=app&ssl=true",
          "alice.smith+billing@example.co.uk", "https://s3.amazonaws.com/bucket/key-2024-05-01.tar.gz?versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"]:
    harmless(v, "gitleaks/detect-secrets allowlists", "URL, port or email with no password")

# ---- harmless: numbers that look like cards or SSNs ----------------------------------------------------------------
for v in ["the order 1234567890123 shipped", "call +1 (555) 123-4567 tomorrow", "timestamp 1764417600000 in ms",
          "invoice 4111111111111112 (not Luhn)", "account 1234 5678 9012 3456", "date 2026-11-29 and 2026-12-01",
          "000-12-3456 is never issued", "666-12-3456 neither", "nor 912-34-5678", "or 123-00-4567 or 123-45-0000",
          "phone 800-555-1234", "ISBN 978-0-306-40615-7", "IBAN DE89 3704 0044 0532 0130 00",
          "tracking 1Z999AA10123456784", "IP 192.168.1.10:5432", "the ratio was 3.14159265358979323846",
          "AWS account 123456789012", "zip 94105-1234", "PI = 3.14159 26535 89793",
          "build 20261202.1534 took 42 s"]:
    harmless(v, "detect-secrets allowlist (numbers)", "number that is not a card or an SSN")

# ---- harmless: ordinary notes ----------------------------------------------------------------------------------------
for v in ["Deploy finished in 42s; 3 pods rolled.", "The meeting moved to 3 pm; bring the 2024 report.",
          "Customer asked about the invoice for March.", "TODO: migrate the cron job to the worker queue",
          "Error: ECONNREFUSED 127.0.0.1:5432", "Retry-After: 30", "Content-Type: application/json; charset=utf-8",
          "Set-Cookie: theme=dark; Path=/; SameSite=Lax", "User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101",
          "X-Request-Id: 7f3c9e2a-1b4d-4e6f-8a9b-0c1d2e3f4a5b", "LOG_LEVEL=debug", "NODE_ENV=production",
          "PORT=8080", "DATABASE_HOST=db.internal", "Slack channel C024BE91L, user U0G9QF9C6",
          "GA4 G-ABCDE12345 and UA-12345678-1", "kid: 2024-rotation-01"]:
    harmless(v, "everyday text", "no secret")

# A harmless case the rules cannot tell apart on purpose (kept to show the limit).
harmless("cache_key: 5d41402abc4b2a76b9719d911017c592", "gitleaks generic-api-key false positive",
         "an md5 cache key after a key keyword looks like a hex API key: a known false positive on purpose")

for i, c in enumerate(cases):
    c["id"] = f"{c['label']}-{i + 1:03d}"

out = {
    "description": "Labelled corpus of the secret filter (issue 18 item 3): see README.md. Generated by build_corpus.py.",
    "cases": [{k: c[k] for k in ("id", "label", "class", "detector", "value", "source", "why") if k in c and c[k] != ""}
              for c in cases],
}
Path(__file__).with_name("corpus.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
pos = sum(1 for c in cases if c["label"] == "secret")
print(f"{len(cases)} cases: {pos} secret, {len(cases) - pos} harmless")
