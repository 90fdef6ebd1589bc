"""Text stage: tokens, stems, passages, near-duplicate sketches, redaction."""
import base64
import json

import pytest

import agentmem
from agentmem import redact, tokenize
from conftest import am


def test_identifiers_match_whole_and_by_part():
    toks = tokenize("The useEffect hook in src/push/usePush.ts uses select_related")
    for t in ("useeffect", "use", "effect", "src/push/usepush.ts", "usepush.ts", "select_related",
              "select", "relat"):
        assert t in toks
    assert "the" not in toks                      # stop word


def test_a_name_written_in_capitals_is_the_word_typed_in_lower_case():
    for written, typed in (("NumPy", "numpy"), ("APIs", "api"), ("DataFrames", "dataframes"), ("IDs", "id")):
        assert set(tokenize(typed)) <= set(tokenize(written)), written
    assert tokenize("useEffect")[0] == "useeffect"                 # an identifier is kept whole too


def test_english_and_russian_stems_conflate_word_forms():
    assert agentmem._stem_en("connections") == agentmem._stem_en("connected") == agentmem._stem_en("connecting")
    assert agentmem._stem_en("running") == "run"
    assert agentmem._stem_ru("уведомления") == agentmem._stem_ru("уведомление")
    assert agentmem._stem_ru("откатил") == agentmem._stem_ru("откатили")
    assert tokenize("Пользователи получают уведомления")[-1] == tokenize("уведомление")[0]


def test_short_forms_number_words_and_hyphens_match_the_full_word():
    def same(a, b):
        return set(agentmem._query_terms(a)) == set(agentmem._query_terms(b))
    assert same("db config", "database configuration")
    assert same("the kids' pics", "children pictures")
    assert same("three retries", "3 retries")
    assert "subag" in tokenize("the sub-agent")                 # "subagent" finds "sub-agent"
    assert tokenize("admin/src/app.py")[:2] == ["admin/src/app.py", "app.py"]   # code names stay


def test_other_scripts_pass_through_unharmed():
    assert tokenize("Καλημέρα κόσμε, नमस्ते दुनिया") == ["καλημέρα", "κόσμε", "नमस्ते", "दुनिया"]


def test_chinese_and_japanese_are_cut_into_pairs_of_signs():
    assert tokenize("東京 の ラーメン") == ["東京", "の", "ラー", "ーメ", "メン"]
    assert set(agentmem._query_terms("数据库")) <= set(tokenize("我们决定使用PostgreSQL数据库"))
    assert "pnpm" in tokenize("以後一律用pnpm")          # a Latin word glued to Chinese is still a word


def test_query_keeps_stems_and_exact_forms():
    terms, forms = agentmem._analyze_query("how are request metrics recorded?")
    assert terms == ["request", "metric", "record"]
    assert forms == {"metric": ["metrics"], "record": ["recorded"]}


def test_long_text_is_split_into_passages_short_text_is_not():
    assert agentmem._passages("One sentence only.") == ["One sentence only."]
    long_text = " ".join("Sentence number %d talks about topic %d." % (i, i) for i in range(40))
    parts = agentmem._passages(long_text)
    assert len(parts) > 3
    assert " ".join(parts).split() == long_text.split()
    chinese = "我们决定使用PostgreSQL作为主数据库。原因是它支持JSON和全文搜索。" * 6    # no spaces at all
    parts = agentmem._passages(chinese)
    assert len(parts) > 2 and "".join(parts).replace(" ", "") == chinese
    assert agentmem._first_sentence(chinese) == "我们决定使用PostgreSQL作为主数据库。"


def test_near_duplicates_share_a_sketch_key_unrelated_texts_do_not():
    a = "Controllers stay thin: at most 20 lines, parse, call the service, render the response."
    b = "Controllers stay thin: at most 20 lines; parse, call the service, render the response!"
    c = "The orders admin page ran 1204 queries because every row loaded its customer."
    assert agentmem._jaccard(agentmem._shingles(a), agentmem._shingles(b)) > agentmem._DUPLICATE_JACCARD
    assert set(agentmem._fingerprint(a)[0]) & set(agentmem._fingerprint(b)[0])
    assert not set(agentmem._fingerprint(a)[0]) & set(agentmem._fingerprint(c)[0])


SECRETS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack": "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
    "stripe": "sk_live_51HabcdefghijklmnopqrstuvWX",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def test_every_kind_of_secret_is_redacted():
    for kind, secret in SECRETS.items():
        out = redact("the value is %s here" % secret)
        assert secret not in out, kind
        assert "[REDACTED" in out, kind


def test_assignments_urls_keys_and_emails_are_masked():
    text = ("DB_PASSWORD=hunter2hunter2\nAPI_TOKEN: abcdef123456\nMY_SECRET='s3cr3t-value'\n"
            "postgres://admin:pa55word@db:5432/x mail jane.doe@example.org\n"
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----")
    out = redact(text)
    for secret in ("hunter2hunter2", "abcdef123456", "s3cr3t-value", "pa55word", "jane.doe@example.org",
                   "MIIEowIBAAKCAQEA"):
        assert secret not in out
    assert "DB_PASSWORD=[REDACTED]" in out and "admin:[REDACTED]@db" in out


def test_plain_prose_about_secrets_is_left_alone():
    text = "Rotate the API key monthly; the password policy needs 12 characters."
    assert redact(text) == text
    for text in ("mysql -u root -p shop", "docker run -p 8080:80 web", "mkdir -p src/keys",
                 "docker login -u bob --password-stdin", "token_limit: 4096", "cache_key_prefix: users"):
        assert redact(text) == text


def test_prose_that_says_what_auth_or_a_token_is_keeps_its_words():
    for text in ("Added a note that auth is upstream-only; the scheduler trusts tenant metadata.",
                 "The token is short-lived and the secret is write-only."):
        assert redact(text) == text
    # a passphrase of four words, or one given with a colon, is still a secret
    assert "battery" not in redact("the password is correct-horse-battery-staple")
    assert "sesame" not in redact("password: open-sesame")


def test_private_spans_are_removed():
    assert agentmem._strip_private("keep <private>my salary is 10</private> this") == "keep  this"
    assert agentmem._strip_private("keep <private>unclosed secret") == "keep "


# Realistic shapes of provider secrets (made up), and code that only looks like one.
R = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
def r(n, alpha=R): return (alpha * 10)[7:7 + n]
H = "0123456789abcdef"
SECRET_FORMATS = {
 "basic": "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
 "curl-u": "curl -u admin:S3cr3tPass https://api.internal/v1",
 "redis": "REDIS_URL=redis://:p4ssw0rdXYZ@cache.internal:6379/0",
 "prose-password": "the staging admin password is Tr0ub4dor&3x",
 "aws-secret-prose": "the aws secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
 "azure": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + r(44) + "==;EndpointSuffix=core.windows.net",
 "azure-sas": "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=" + r(40) + "%3D",
 "slack-app": "xapp-1-A0123456789-1234567890123-" + r(40),
 "gcp-oauth": "GOCSPX-" + r(28),
 "sendgrid": "SG." + r(22) + "." + r(43),
 "pypi": "pypi-AgEIcHlwaS5vcmc" + r(60),
 "discord-hook": "https://discord.com/api/webhooks/123456789012345678/" + r(60),
 "telegram": "bot token 123456789:AA" + r(33),
 "vault": "hvs." + r(90),
 "doppler": "dp.st.dev." + r(40),
 "linear": "lin_api_" + r(40),
 "notion": "ntn_" + r(46),
 "atlassian": "ATATT3xFfGF0" + r(180),
 "heroku": "HRKU-" + r(60),
 "square": "sq0atp-" + r(22),
 "paypal": "access_token$production$" + r(16, "abcdefghij0123456789") + "$" + r(32, H),
 "shopify": "shpat_" + r(32, H),
 "digitalocean": "dop_v1_" + r(64, H),
 "mailgun": "key-" + r(32),
 "grafana": "glsa_" + r(32) + "_" + r(8, H),
 "okta": "Authorization: SSWS 00" + r(40),
 "supabase": "sbp_" + r(40, H),
 "databricks": "dapi" + r(32, H),
 "dockerhub": "dckr_pat_" + r(27),
 "groq": "gsk_" + r(52),
 "replicate": "r8_" + r(37),
 "age": "AGE-SECRET-KEY-1" + r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
 "pgp": "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF" + r(60) + "\n-----END PGP PRIVATE KEY BLOCK-----",
 "datadog": "DD_API_KEY=" + r(32, H),
 "cloudflare": "CLOUDFLARE_API_TOKEN=" + r(40),
 "stripe-whsec": "whsec_" + r(32),
 "xai": "xai-" + r(80),
 "newrelic": "NRAK-" + r(27, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
 "sentry": "SENTRY_DSN=https://" + r(32, H) + "@o123456.ingest.sentry.io/4505",
 "json-pass": '{"db_password": "Pa55w0rd!"}',
 "yaml-token": "api_token: tok_" + r(24),
 "gitlab-runner": "glrt-" + r(20),
 "twilio-key": "SK" + r(32, H),
 "mailchimp": r(32, H) + "-us14",
 "nuget": "oy2" + r(43, "abcdefghijklmnopqrstuvwxyz0123456789"),
 "discord-bot": "MTA" + r(21) + "." + r(6) + "." + r(27),
 "square-access": "EAAA" + r(60),
 "meta": "EAACEdEose0cBA" + r(100),
 "x-bearer": "AAAAAAAAAAAAAAAAAAAAA" + r(80),
 "sentry-token": "sntrys_" + r(80),
 "pulumi": "pul-" + r(40, H),
 "terraform-cloud": r(14) + ".atlasv1." + r(67),
 "fly": "fo1_" + r(43),
 "planetscale": "pscale_tkn_" + r(43),
 "rubygems": "rubygems_" + r(48, H),
 "mapbox": "sk.eyJ1Ijoi" + r(60) + "." + r(22),
 "asana": "1/" + r(16, "0123456789") + ":" + r(32, H),
 "airtable": "pat" + r(14) + "." + r(64, H),
 "contentful": "CFPAT-" + r(43),
 "dropbox": "sl." + r(130),
 "figma": "figd_" + r(40),
 "launchdarkly": "api-%s-%s-%s-%s-%s" % (r(8, H), r(4, H), r(4, H), r(4, H), r(12, H)),
 "lob": "live_" + r(35, H),
 "langsmith": "lsv2_pt_" + r(32, H) + "_" + r(10, H),
 "pinecone": "pcsk_" + r(5) + "_" + r(60),
 "netlify": "nfp_" + r(36),
 "render": "rnd_" + r(32),
 "bitbucket": "ATBB" + r(40),
 "jfrog": "cmVmdGtuOjAxOj" + r(50),
 "sonar": "squ_" + r(40, H),
 "octopus": "API-" + r(20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") + "123456",
 "tailscale": "tskey-auth-k" + r(10) + "CNTRL-" + r(30),
 "buildkite": "bkua_" + r(40, H),
 "1password": "ops_eyJ" + r(60),
 "vercel-blob": "vercel_blob_rw_" + r(16) + "_" + r(30),
 "discord-bot-long": "MTA5ODc2NTQzMjEwOTg3NjU0MzI." + r(6) + "." + r(38),
 "unlisted-prefix": "re_Nq7VwYS8_VP7Hb1DX8pPd5khxE3pyIgKp",
 "unlisted-prefix-hex": "FLWSECK-" + r(32, H) + "-X",
}
LOOK_ALIKES = [
 "def verify(token: Optional[str]) -> bool:", "primary_key=True", "sort_key: created_at", "access_token=None",
 "SECRET_KEY = os.environ['SECRET_KEY']", "export OPENAI_API_KEY=<YOUR_TOKEN>", "password: ${DB_PASSWORD}",
 "OPENAI_API_KEY=sk-...your-key-here", "api_key = settings.api_key", "token = request.headers.get('Authorization')",
 "the password field is required", "const password = await getPassword()", "auth_token: str = ''",
 "if not token: raise", "cache_key = f'user:{user_id}'", "foreign_key=ForeignKey(User)", "Token-based splitting works",
 "key-value store", "The token expires after 15 minutes", "password = getpass.getpass()", "secret_name: my-app-secrets",
 "partition_key: tenant_id", "use the Bearer token from the login response", "basic auth is disabled",
 "AUTH_URL=https://auth.example.com/login", "jwt_secret: process.env.JWT_SECRET", "private_key_path = 'keys/id_rsa'",
 "token_count = len(tokens)", "max_tokens=2048", "the API key is stored in Vault", "password_hash = bcrypt.hash(pw)",
 "if token is None: raise AuthError", "export GITHUB_TOKEN=$(gh auth token)", "SKIPPED tests/test_api.py::test_login",
 "API-RESPONSE-HANDLER", "The AAAA record points at ::1", "sl.no is the serial number column", "live_reload = True",
 "uuid 123e4567-e89b-12d3-a456-426614174000", "Use EAAccess for the role", "1/2 of the tests fail",
 "openssl req -new -key server.key -out server.csr", "7z x archive.7z -o/tmp/out", "redis-cli -h cache ping",
 "zip -r out.zip src", "sshpass -f ~/.pw ssh host", "htpasswd -c .htpasswd admin", "zip -P $ZIP_PASS out.zip f",
 "aws configure set region eu-west-1", "the refresh_token is rotated hourly",
 "the password is stored in Vault as db/creds", "password reset links expire after 24h",
 "   107→  if creds != settings.token:\n   108→      raise HTTPException(status_code=401)",
 "gh secret set DEPLOY_KEY --body $DEPLOY_KEY", "npm config set registry https://registry.npmjs.org/",
 "test_resetPasswordViaEmailLinkFlow", "build-20240115093000123456789", "fix/PAY-112-move-done-tickets",
 "main.go:12:3:error:undefined", "12:00:00:UTC:ok",
 # an example's placeholder password, an integrity hash, a trace id, a commit, a digest, a UUID
 "DATABASE_URL=postgres://user:password@localhost:5432/app", "mysql://root:changeme@localhost/shop",
 "redis://:xxx@localhost:6379/0", "amqp://guest:<password>@rabbit:5672",
 '<script src="/app.js" integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC">',
 "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
 "reverted 9fceb02d0ae598e95dc970b74767f19372d61af8 on main",
 "image digest sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
 "the order id is 3f2b8c1e-9d4a-4e6f-8a7b-1c2d3e4f5a6b",
]


def secret_part(text):
    """The part of a sample that must not survive redaction."""
    for sep, end in (("sig=", None), ("://:", "@"), ("-u admin:", " "), ("AccountKey=", ";"),
                     ("https://", "@")):
        rest = text.split(sep, 1)[1] if sep in text else ""
        if rest and (end is None or end in rest):
            return (rest.split(end)[0] if end else rest)[:10]
    return text[-10:]


@pytest.mark.parametrize("name", sorted(SECRET_FORMATS))
def test_every_provider_format_is_masked(name):
    sample = SECRET_FORMATS[name]
    masked = agentmem.redact(sample)
    assert "[REDACTED" in masked and secret_part(sample) not in masked, masked


def test_every_cue_in_a_text_wakes_its_patterns_even_when_cues_overlap():
    # the cue scan finds the longest cue at each position; a shorter one inside it ("sk" in
    # "sk-", "pass" in "password") or across it ("pas|sk") must wake its patterns all the same
    import random
    rnd = random.Random(5)
    cues = agentmem._SECRET_TRIGGERS
    for _ in range(3000):
        text = "".join(rnd.choice(cues) + rnd.choice(["", " ", "x", "_"]) for _ in range(4))
        text = text[rnd.randrange(3):]
        want = {i for i, (ts, _p, _r) in enumerate(agentmem._SECRET_PATTERNS)
                if any(t in text for t in ts)}
        assert agentmem._secret_cues(text) == want, text


def test_code_that_only_looks_like_a_secret_is_left_alone():
    assert [(x, agentmem.redact(x)) for x in LOOK_ALIKES if agentmem.redact(x) != x] == []


# (how the person names a secret, a value of that kind): the kinds that have no prefix of their own
NAMED_BARE = [
    ("Our identity provider's client secret is %s, keep it out of git.", "8Q~xY7kLmN3pQrStUv_WxYz-AbCdEfGhIj2Kl9Mn"),
    ("The CDN API token: %s", "Zk3nW9pQ2rXv7LmT4yBc8HdJ1fGs6AeKoPuRi5Nq"),
    ("The search cluster's admin key is %s.", "6be0576ff61c053d5f9a3225e2a90f76"),
    ("metrics api key %s", "9a8b7c6d5e4f30211f2e3d4c5b6a7980"),
    ("payments client secret = %s", "EOq2cWx9Lm3Nv8Bk7Jh6Gf5Dd4Ss3Aa2Qq1Ww0Ee9Rr8Tt7Yy6Uu5Ii4Oo3Pp2"),
    ("the web framework's secret key is %s", "k#9m!x2@v$p7q^z&w3e*r(t)y_u+i-o=a1s4d6f8g0h"),
    ("log in to staging with the password %s", "Autumn2031!"),
]


@pytest.mark.parametrize("named,value", NAMED_BARE)
def test_a_value_named_a_secret_once_is_masked_where_it_stands_bare(named, value):
    said = set()
    assert value not in redact(named % value, said=said)
    used = "The nightly export now signs its requests with %s, and it passes." % value
    assert redact(used, said=said) == "The nightly export now signs its requests with [REDACTED], and it passes."
    assert value not in redact((named % value) + " Then use " + value + " in CI.")   # one text: the same
    assert redact(used) == used                          # named nowhere: a word like any other


def test_metadata_and_the_hook_text_are_redacted_too(store, tmp_path):
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    p = am("import", "-", input=json.dumps({"text": "Deploy notes", "files": ["deploy/%s.txt" % key],
                                            "session": "s-" + key, "ticket": {"token": key}}) + "\n")
    assert p.returncode == 0, p.stderr
    on_disk = "".join(f.read_text() for f in store.rglob("*") if f.is_file() and f.suffix in (".md", ".json"))
    assert key not in on_disk and "Deploy notes" in on_disk
    hook = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "Stop",
                       "last_assistant_message": "Set GITHUB_TOKEN=%s in CI." % key})
    am("capture", input=hook, env={"AGENTMEM_DISABLE": ""})
    queued = "".join(f.read_text() for f in store.rglob("*.json"))
    assert key not in queued


def test_plain_words_after_basic_or_token_stay():
    assert agentmem.redact("Let me show you some basic exercises.") == "Let me show you some basic exercises."
    assert agentmem.redact("Authorization: Basic dXNlcjpwYXNz") == "Authorization: Basic [REDACTED]"


def test_a_secret_the_person_pastes_reaches_no_file_of_the_store(store, tmp_path):
    from sessions import hook_json, render_claude
    key = "sk_live_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
    steps = [("user", "Deploy with STRIPE_KEY=%s and tell me why the webhook fails." % key),
             ("assistant", "The webhook failed because the signing secret was rotated; fixed by reading it "
                           "from the vault in billing/webhooks.py.")]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(steps, "sess-key"))
    am("capture", "--sync", input=hook_json("sess-key", path), check=0)
    everything = b"".join(f.read_bytes() for f in store.rglob("*") if f.is_file())
    assert key.encode() not in everything and b"signing secret was rotated" in everything


def test_a_key_the_person_named_is_masked_in_the_agent_s_words_at_every_entry_point(store, tmp_path):
    from sessions import hook_json, render_claude
    key = "6be0576ff61c053d5f9a3225e2a90f76"          # 32 hex: like a digest, but the person named it
    steps = [("user", "The search cluster's admin key is %s. Let the nightly export use it." % key),
             ("tool", "Bash", {"command": "cat .env.test"}, "SEARCH_ADMIN_KEY=%s" % key),
             ("assistant", "The nightly export now signs its requests with %s, and it passes." % key)]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(steps, "sess-named"))
    am("capture", "--sync", input=hook_json("sess-named", path), check=0)
    # the Stop hook's last message, with the turn it ends in the transcript
    stop = json.loads(hook_json("sess-named", path, event="Stop"))
    stop["last_assistant_message"] = "The export job signs with %s now." % key
    am("capture", input=json.dumps(stop), env={"AGENTMEM_DISABLE": ""})
    am("remember", "Staging admin key is %s; the export job signs with %s too." % (key, key), check=0)
    line = {"text": "The search admin key is %s." % key, "tags": ["search"], "asked": "sign with %s" % key}
    am("import", "-", input=json.dumps(line) + "\n", check=0)
    everything = b"".join(f.read_bytes() for f in store.rglob("*") if f.is_file())
    assert key.encode() not in everything
    assert b"now signs its requests with [REDACTED], and it passes" in everything


# (what the person asks for, naming a kind of secret; what the agent answers, the value bare in it)
NAMED_THEN_SAID = {
    "hex": ("Hook the search service's admin key into the integration suite.",
            "The integration suite now reads c41e9b07d2a85f36e10b4d7a9c2f6e58 out of the team vault."),
    "signs": ("Put the web app's secret key in the staging settings, please.",
              "Staging settings now load w7&Kp2!zQ9#mR4$vT1^xN8*bL5=eY3+h on boot."),
    "words": ("Set up the reporting database password for the nightly job.",
              "The nightly job signs in with Gr4nite-Lantern-Orchid-61 from now on."),
    "short": ("Add basic auth creds for the docs preview.",              # no sign, no word in it
              "Preview basic auth: user `docs`, pass `Vq4nT8sLm`."),
    "shared": ("Reset the office VPN's pre-shared key.",
               "The office VPN now uses 0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a."),
}
VALUES = {"hex": "c41e9b07d2a85f36e10b4d7a9c2f6e58", "signs": "w7&Kp2!zQ9#mR4$vT1^xN8*bL5=eY3+h",
          "words": "Gr4nite-Lantern-Orchid-61", "short": "Vq4nT8sLm", "shared": "0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a"}


def on_disk(store):
    return b"".join(f.read_bytes() for f in store.rglob("*") if f.is_file()).decode("utf-8", "replace")


@pytest.mark.parametrize("kind", sorted(NAMED_THEN_SAID))
def test_a_bare_value_the_agent_gives_where_its_exchange_names_a_secret_is_masked(kind, store, tmp_path):
    from sessions import hook_json, render_claude
    asked, answer = NAMED_THEN_SAID[kind]
    value, later = VALUES[kind], "Rotated: the old value %s is gone." % VALUES[kind]
    build = "Deployed build 7f1e2d3c4b5a69788796a5b4c3d2e1f0 to staging."   # no secret named: kept
    steps = [("user", asked), ("assistant", answer), ("user", "Thanks. Now bump the report's page size."),
             ("assistant", later), ("user", "Which build is live?"), ("assistant", build)]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(steps, "sess-" + kind))
    am("capture", "--sync", input=hook_json("sess-" + kind, path), check=0)
    stored = on_disk(store)
    assert value not in stored and value[:12] not in stored        # said again later: masked too
    assert "7f1e2d3c4b5a69788796a5b4c3d2e1f0" in stored
    assert answer.replace(value, "[REDACTED]")[:40] in stored      # the rest of the answer stays
    assert redact(answer) == answer                     # named nowhere: a word like any other


@pytest.mark.parametrize("kind", sorted(NAMED_THEN_SAID))
def test_the_stop_hook_s_last_message_is_masked_as_its_exchange_is(kind, store, tmp_path):
    from sessions import hook_json, render_claude
    asked, answer = NAMED_THEN_SAID[kind]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude([("user", asked)], "sess-stop-" + kind))
    stop = json.loads(hook_json("sess-stop-" + kind, path, event="Stop"))
    stop["last_assistant_message"] = answer
    queued = agentmem._Capture(agentmem.open_store()).enqueue(agentmem._hook_fields(stop))
    with open(queued, encoding="utf-8") as f:
        job = json.load(f)
    assert VALUES[kind] not in json.dumps(job) and "[REDACTED]" in job["last_message"]
    am("capture", "--sync", input=json.dumps(stop), check=0)
    assert VALUES[kind] not in on_disk(store) and "[REDACTED]" in on_disk(store)


def test_look_alikes_stay_in_an_exchange_that_names_a_secret(store, tmp_path):
    from sessions import hook_json, render_claude
    look_alikes = [
        "Reverted commit 5d41402abc4b2a76b9719d911017c592aeb3f0c1 which broke the token refresh.",
        "The base image is pinned to sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.",
        "The failing call has trace id 7a9e3c1f5b2d4e6f8a0b1c2d3e4f5a6b and request id "
        "0af7651916cd43dd8448eb211c80319c.",
        "Tenant 3f2b8c1e-9d4a-4e6f-8a7b-1c2d3e4f5a6b owns the key.",
        'The CDN tag is <script src="/app.js" integrity="sha384-'
        'Li9vy3DqF8tnTXuiaAJuML3ky+er10rcgNR/VqsVpcw+ThHmYcwiB1pbOxEbzJr7" crossorigin>.',
        "git show 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 has the change.",
    ]
    steps = [("user", "The API token for the billing service expired; rotate it and tell me what changed."),
             ("assistant", " ".join(look_alikes) + " The new one is c41e9b07d2a85f36e10b4d7a9c2f6e58.")]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(steps, "sess-alike"))
    am("capture", "--sync", input=hook_json("sess-alike", path), check=0)
    stored = on_disk(store)
    assert "c41e9b07d2a85f36e10b4d7a9c2f6e58" not in stored           # the new token: masked
    for value in ("5d41402abc4b2a76b9719d911017c592aeb3f0c1",                     # a commit
                  "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  # a digest
                  "7a9e3c1f5b2d4e6f8a0b1c2d3e4f5a6b", "0af7651916cd43dd8448eb211c80319c",     # trace, request
                  "3f2b8c1e-9d4a-4e6f-8a7b-1c2d3e4f5a6b",                             # a UUID
                  "sha384-Li9vy3DqF8tnTXuiaAJuML3ky+er10rcgNR/VqsVpcw+ThHmYcwiB1pbOxEbzJr7",  # SRI
                  "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"):                     # a git command's
        assert value in stored, value


@pytest.mark.parametrize("text,secret", [
    ("The secret access key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is in the vault", "wJalrXUtnFEMI"),
    ("Call the staging API with secret Zq8pL2vN9xR4tY7wK1mB3cD6 for now", "Zq8pL2vN9x"),
    ("SECRET_KEY=)@%k8!z^c+r1p#v&q9d$w2e*t7y(u0i-o=p", "#v&q9d$w2e"),
    ("export DJANGO_SECRET_KEY=django-insecure-8x#k2!mz^q@w1e$r5t", "mz^q@w1e"),
    ("FCM server key AAAAbcdEFG1:APA91bH" + "x7Y" * 45, "APA91bH"),
    ("mysql -u root -pSup3rS3cret shop < dump.sql", "Sup3rS3cret"),
    ("docker login -u bob -p Dkr9Pass4Word registry.example.com", "Dkr9Pass4Word"),
    ("pg_dump --password 'Pg pass 42' shop", "Pg pass 42"),
    ("secret_key_base: 8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a2918", "8f7e6d5c4b3a"),
    ("Log in to the staging admin with password Summer2024! for now", "Summer2024"),
    ("The wiki's admin password is now 'copper kettle 71'.", "copper kettle"),
    ("Set the password to Kx7#mQ2p in the router", "Kx7#mQ2p"),
    ("Use Kx7#mQ2p9 as the router's admin password", "Kx7#mQ2p9"),
    ("hunter2x9 is my password, don't tell anyone", "hunter2x9"),
    ("the passphrase is blue-horse-battery-staple-42", "battery-staple"),
    ("credentials:\n  secret: nyoL6uniiFw152cTe8r0khCEr7n1Ay", "uniiFw152c"),
    ("cat ~/.pgpass\ndb.internal:5432:shop:admin:Pg9ass!word", "Pg9ass"),
    ("*:*:shop:admin:Pg9ass!word\r\n*:*:crm:admin:Cr8ass!word\r\n", "Cr8ass"),
    ("Zq8pL2vN9xR4tY7wK1mB3cD6 is our staging API key", "Zq8pL2vN9x"),
    ("heroku api key 01234567-89ab-cdef-0123-456789abcdef", "89ab-cdef-0123"),
    ("the signing secret is 9e107d9d372bb6826bd81d3542a419d6 in prod", "9e107d9d372bb6"),
    ("sshpass -p 'Ssh9Pass4Word' ssh deploy@web1", "Ssh9Pass4Word"),
    ("redis-cli -h cache -a Rd9sPass4Word ping", "Rd9sPass4Word"),
    ("openssl enc -aes-256-cbc -k Op9nPass4Word -in backup.tar", "Op9nPass4Word"),
    ("7z a -pSz9Pass4Word backup.7z data/", "Sz9Pass4Word"),
    ("zip -P Zp9Pass4Word backup.zip data", "Zp9Pass4Word"),
    ("htpasswd -b -B .htpasswd admin Ht9Pass4Word", "Ht9Pass4Word"),
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtn"),
    ("npm config set //registry.example.com/:_authToken Np9mTok3nValue42", "Np9mTok3n"),
    ("gh secret set DEPLOY_KEY --body Gh9Secr3tValue42", "Gh9Secr3t"),
])
def test_secrets_in_prose_env_files_and_prefixed_server_keys_are_masked(text, secret):
    assert secret not in agentmem.redact(text)


@pytest.mark.parametrize("text,secret", [
    ("пароль от базы: Xk92mPq7Lz!", "Xk92mPq7Lz"), ("密码是 Xk92mPq7Lz!", "Xk92mPq7Lz"),
    ("la contraseña es Xk92mPq7Lz!", "Xk92mPq7Lz"), ("das Passwort ist Xk92mPq7Lz!", "Xk92mPq7Lz"),
    ("le mot de passe : Xk92mPq7Lz!", "Xk92mPq7Lz"), ("パスワード: Xk92mPq7Lz!", "Xk92mPq7Lz"),
    ("ключ API: Zx8Kq2Lm9Pw4Rt7Yv3Nb6Hj1Gf5Ds0Ac", "Zx8Kq2Lm9P"), ("api密钥: Zx8Kq2Lm9Pw4Rt7Yv3Nb6Hj1", "Zx8Kq2Lm9P"),
    ("login admin, pwd: Xk92mPq7Lz!", "Xk92mPq7Lz"), ("user=admin pass=Xk92mPq7Lz!", "Xk92mPq7Lz"),
    ("here is the key: Zx8Kq2Lm9Pw4Rt7Yv3Nb6Hj1Gf5Ds0Ac", "Zx8Kq2Lm9P"), ('{"пароль": "Xk92mPq7Lz!"}', "Xk92mPq7Lz"),
    ('pass = "Xk92mPq7Lz!"', "Xk92mPq7Lz"),
    ("machine api.heroku.com login me password 9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", "9f8e7d6c-5b4a"),
    ("client-key-data: " + base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzx8Kq2Lm9Pw4Rt7Yv3"
                                            ).decode(), "LS0tLS1CRUdJTiBSU0Eg"),
    ("Set-Cookie: sid=s%3AZx8Kq2Lm9Pw4Rt7Yv3Nb6Hj1Gf5Ds0Ac.abc; Path=/; HttpOnly", "Zx8Kq2Lm9P"),
])
def test_a_password_or_key_named_in_another_language_or_in_a_config_s_shape_is_masked(text, secret):
    assert secret not in agentmem.redact(text)


@pytest.mark.parametrize("text", [
    "пароль хранится в Vault", "смени пароль пользователя admin", "ключ кэша: user:{id}", "clave primaria: id",
    "密码长度至少 8 位", "токен истекает через 15 минут", "the tests pass in CI now", "pass: true",
    "pwd: /home/app", "bypass: Xk92mPq7Lz!", "компас: Xk92mPq7Lz!", "the machine learning password policy",
    "key=lambda x: x[1]", 'key: "user:{id}:profile:v2"', "Set-Cookie: theme=dark; Path=/", "certificate-authority-data: " + base64.b64encode(
        b"-----BEGIN CERTIFICATE-----\nMIIDBTCCAe2gAwIBAgIIabcdefghijk").decode(),
])
def test_words_after_a_password_s_name_in_any_language_stay_unless_they_look_like_one(text):
    assert agentmem.redact(text) == text


@pytest.mark.parametrize("text", [
    "The password field needs a MinLength of 8", "password hashing uses bcrypt",
    "Use config.yaml as the secret store", "Set TOKEN_TTL_SECONDS as the token lifetime",
    "Reset the password for staging users", "The passphrase prompt appears twice",
])
def test_words_after_password_in_prose_stay_unless_they_look_like_one(text):
    assert agentmem.redact(text) == text


def test_a_secret_is_masked_before_a_long_message_is_cut(store, tmp_path):
    from sessions import hook_json, render_claude
    key = "sk-ant-api03-" + "Qw7" * 20
    head = "Deploy the worker " + "and the scheduler " * 25 + "with the key "
    request = head + " " * (482 - len(head)) + key + " today"   # cut at 500: 18 signs of the key
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude([("user", request), ("assistant", "Deployed.")], "sess-cut"))
    am("capture", "--sync", input=hook_json("sess-cut", path), check=0)
    on_disk = "".join(f.read_text() for f in store.rglob("*") if f.is_file() and
                      f.suffix in (".md", ".json", ".log"))
    assert "Deploy the worker" in on_disk and "sk-ant-api03-Qw7" not in on_disk


def test_a_hook_s_prompt_never_reaches_the_queue_in_clear(store, tmp_path):
    from sessions import hook_json, render_claude
    token = "ghp_" + "Zq8Lw2Xv5Nc7Rb4Td1Yf6Hs9Jk3Mp0Ga2Ue"
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude([("user", "Deploy it with the new token %s please" % token)], "sess-queue"))
    after = json.loads(hook_json("sess-queue", path, event="AfterAgent"))
    after.update(prompt="Deploy it with the new token %s please" % token, prompt_response="Deployed.")
    queued = agentmem._Capture(agentmem.open_store()).enqueue(agentmem._hook_fields(after))
    with open(queued, encoding="utf-8") as f:
        assert token not in f.read()


def test_names_made_of_underscores_asterisks_and_globs_survive_every_stage(store, tmp_path):
    from sessions import hook_json, render_claude
    names = ("`__version__`", "src/kit/__init__.py", "src/kit/__main__.py", "__all__", "snake__case",
             "*args", "**kwargs", "build/**/*.pyc", "**Fix:**")
    steps = [("user", "From now on keep `__version__` in src/kit/__init__.py equal to the release tag."),
             ("user", "We decided the entry point lives in src/kit/__main__.py and exports go in __all__."),
             ("user", "Always name private helpers in snake__case; wrappers pass *args and **kwargs "
                      "through, and never commit build/**/*.pyc files."),
             ("tool", "Edit", {"file_path": "/home/dev/shop/src/kit/__main__.py"}, "ok"),
             ("assistant", "**Fix:** moved the entry point into src/kit/__main__.py; __all__ now lists "
                           "the public names and `__version__` reads the tag.")]
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(steps, "sess-names"))
    am("capture", "--sync", input=hook_json("sess-names", path), check=0)
    typed = [m for m in map(json.loads, am("export").stdout.splitlines()) if m["type"] != "episode"]
    told = " ".join(m["text"] for m in typed if m["type"] in ("convention", "decision"))
    [digest] = [m["text"] for m in typed if m["type"] == "summary"]
    on_disk = "".join(f.read_text() for f in store.rglob("*.md"))
    start = am("inject", "--format", "text", input="{}").stdout
    recalled = " ".join(h["text"] for h in json.loads(am("recall", "kit entry point helpers version",
                                                         "--json", "--limit", "9").stdout))
    for name in names[:-1]:
        for where, text in (("typed", told), ("disk", on_disk), ("start", start), ("recall", recalled)):
            assert name in text, (where, name, text)
    assert "Reported: Fix: moved the entry point into src/kit/__main__.py; __all__ now" in digest
    [rule] = [m for m in typed if m["type"] == "convention" and "snake__case" in m["text"]]
    app = agentmem._DashboardApp(str(store), ["http://127.0.0.1:1"])
    _status, _h, page = app.respond("GET", "/m/" + rule["id"], {
        "Host": "127.0.0.1:1", "Cookie": "agentmem=" + app.token})
    assert "snake__case" in page.decode() and "build/**/*.pyc" in page.decode()
