"""Where kvlint's documentation lives on the web: the SARIF `informationUri` and per-rule
`helpUri`, the `url` of JSON findings. One place to change when the repository moves
(pyproject.toml's [project.urls] says the same)."""
HOMEPAGE = "https://github.com/kvlint/kvlint"
RULE_DOCS = HOMEPAGE + "/blob/main/docs/rules/{code}.md"


def rule_url(code: str) -> str:
    """The rule's page (docs/rules/KVnnn.md, generated from rules/codes/KVnnn.toml)."""
    return RULE_DOCS.format(code=code)
