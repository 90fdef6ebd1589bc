"""Text stage: tokens, stems, passages, near-duplicate sketches, redaction."""
import agentmem
from agentmem import redact, tokenize


def test_identifiers_match_whole_and_by_part():
    toks = tokenize("The useEffect hook in src/push/usePush.ts uses select_related")
    for t in ("useeffect", "use", "effect", "src/push/usepush.ts", "usepush.ts", "select_related",
              "select", "relat"):
        assert t in toks
    assert "the" not in toks                      # stop word


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
    a = "Handlers must be thin: at most 15 lines, decode, call the service, encode the response."
    b = "Handlers must be thin: at most 15 lines; decode, call the service, encode the response!"
    c = "The orders admin page ran 1204 queries because every row loaded its customer."
    assert agentmem._jaccard(agentmem._shingles(a), agentmem._shingles(b)) > agentmem._DUPLICATE_JACCARD
    assert set(agentmem._sketch(a)) & set(agentmem._sketch(b))
    assert not set(agentmem._sketch(a)) & set(agentmem._sketch(c))


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


def test_private_spans_are_removed():
    assert agentmem._strip_private("keep <private>my salary is 10</private> this") == "keep  this"
    assert agentmem._strip_private("keep <private>unclosed secret") == "keep "
