"""`[tool.kvlint]` in pyproject.toml: discovery, validation, and merging with the command line.

Discovery: for each checked file, the nearest `pyproject.toml` holding a `[tool.kvlint]`
table, walking up from the file's folder (a `pyproject.toml` without the table is skipped,
as ruff does). `--config FILE` names one file for every path; `--isolated` ignores all.

Keys (all optional):

    select, ignore, extend-select   lists of codes or prefixes ("KV1", "KV301", "ALL")
    exclude, extend-exclude         lists of glob patterns, relative to the config's folder;
                                    a pattern without "/" matches any path component
    per-file-ignores                table: glob -> list of codes
    severity                        table: code -> "error" | "warning" | "info"
    preview                         true: also run the preview rules and heuristic branches
    [tool.kvlint.heuristics]        extra names for the context heuristics (HeuristicNames),
                                    e.g. prefill-function-words = ["encode_step"]; the values
                                    are added to the built-in names

An unknown key, a wrong type or an unknown code raises ConfigError naming the file and the
key; the CLI turns it into exit code 2.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvlint.settings import HeuristicNames, Settings, code_matches
from kvlint.toml_snapshot import toml_module

tomllib = toml_module()

SEVERITIES = ("error", "warning", "info")
CODE_LISTS = ("select", "ignore", "extend-select")
GLOB_LISTS = ("exclude", "extend-exclude")
TABLES = ("per-file-ignores", "severity", "heuristics")
BOOLEANS = ("preview",)
KNOWN_KEYS = CODE_LISTS + GLOB_LISTS + TABLES + BOOLEANS
HEURISTIC_KEYS = {f.name.replace("_", "-"): f.name for f in dataclasses.fields(HeuristicNames)}


class ConfigError(Exception):
    """A bad configuration value; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Overrides:
    """What the command line says; None = not given."""

    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Optional[Tuple[Tuple[str, Tuple[str, ...]], ...]] = None
    extend_per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    preview: Optional[bool] = None


def known_codes() -> frozenset:
    from kvlint.catalog import load_catalog

    return frozenset(load_catalog().rules) | {"KV000"}


def check_codes(codes: Sequence[str], where: str) -> None:
    if not codes:
        return  # nothing to check: the catalog is not loaded for it
    known = known_codes()
    for c in codes:
        if c != "ALL" and not any(k.startswith(c) for k in known):
            raise ConfigError(f"{where}: unknown rule code or prefix: {c}")


# -- discovery ------------------------------------------------------------------------------
def read_table(path: str) -> Optional[Dict[str, Any]]:
    """The `[tool.kvlint]` table of a pyproject.toml (or a kvlint-only TOML file given with
    --config: a top-level table without `tool` is taken as the kvlint table), else None."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    tool = data.get("tool")
    if isinstance(tool, dict) and "kvlint" in tool:
        table = tool["kvlint"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.kvlint] must be a table")
        return table
    if os.path.basename(path) != "pyproject.toml" and "tool" not in data:
        return data  # kvlint.toml-style file named with --config
    return None


def find_config(start: str, _cache: Optional[Dict[str, Optional[str]]] = None) -> Optional[str]:
    """The nearest pyproject.toml with a [tool.kvlint] table at or above `start`."""
    folder = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    visited: List[str] = []
    found: Optional[str] = None
    while True:
        if _cache is not None and folder in _cache:
            found = _cache[folder]
            break
        visited.append(folder)
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and read_table(candidate) is not None:
            found = candidate
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if _cache is not None:
        for v in visited:
            _cache[v] = found
    return found


# -- validation -----------------------------------------------------------------------------
def _string_list(value: Any, path: str, key: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.kvlint] `{key}` must be a list of strings, "
                          f"got {_describe(value)}")
    return tuple(value)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, (dict, list)) else type(value).__name__


def parse_table(table: Dict[str, Any], path: str) -> Dict[str, Any]:
    """Validate a [tool.kvlint] table; returns the Settings keyword arguments it sets."""
    out: Dict[str, Any] = {}
    for key, value in table.items():
        if key not in KNOWN_KEYS and key in HEURISTIC_KEYS:
            raise ConfigError(f"{path}: [tool.kvlint] unknown key `{key}`: it is a heuristics option; "
                              f"put it under [tool.kvlint.heuristics] (`{key} = [...]` there)")
        if key not in KNOWN_KEYS:
            hint = _close(key, KNOWN_KEYS)
            raise ConfigError(f"{path}: [tool.kvlint] unknown key `{key}`{hint}")
        name = key.replace("-", "_")
        if key in CODE_LISTS:
            codes = tuple(c.upper() for c in _string_list(value, path, key))
            check_codes(codes, f"{path}: [tool.kvlint] `{key}`")
            out[name] = codes
        elif key in GLOB_LISTS:
            out[name] = _string_list(value, path, key)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [tool.kvlint] `per-file-ignores` must be a table "
                                  f"of glob = [codes], got {_describe(value)}")
            pairs = []
            for glob, codes in value.items():
                codes = tuple(c.upper() for c in _string_list(codes, path, f"per-file-ignores.{glob}"))
                check_codes(codes, f"{path}: [tool.kvlint] `per-file-ignores.{glob}`")
                pairs.append((glob, codes))
            out[name] = tuple(pairs)
        elif key == "severity":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [tool.kvlint] `severity` must be a table of "
                                  f"CODE = \"error\"|\"warning\"|\"info\", got {_describe(value)}")
            known = known_codes()
            sev = {}
            for code, level in value.items():
                if code.upper() not in known:
                    raise ConfigError(f"{path}: [tool.kvlint] `severity.{code}`: unknown rule code")
                if level not in SEVERITIES:
                    raise ConfigError(f"{path}: [tool.kvlint] `severity.{code}` must be one of "
                                      f"{', '.join(SEVERITIES)}, got {value[code]!r}")
                sev[code.upper()] = level
            out[name] = sev
        elif key == "heuristics":
            out["names"] = parse_heuristics(value, path)
        elif key in BOOLEANS:
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: [tool.kvlint] `{key}` must be true or false, got {_describe(value)}")
            out[name] = value
    return out


def parse_heuristics(value: Any, path: str) -> HeuristicNames:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [tool.kvlint] `heuristics` must be a table, got {_describe(value)}")
    base = HeuristicNames()
    changes = {}
    for key, words in value.items():
        if key not in HEURISTIC_KEYS:
            hint = _close(key, HEURISTIC_KEYS)
            raise ConfigError(f"{path}: [tool.kvlint.heuristics] unknown key `{key}`{hint}")
        field = HEURISTIC_KEYS[key]
        extra = _string_list(words, path, f"heuristics.{key}")
        current = getattr(base, field)
        changes[field] = current + tuple(w for w in extra if w not in current)
    return dataclasses.replace(base, **changes)


def _close(key: str, choices) -> str:
    import difflib

    match = difflib.get_close_matches(key, list(choices), n=1)
    return f" (did you mean `{match[0]}`?)" if match else ""


# -- resolution -----------------------------------------------------------------------------
def load_settings(config_file: Optional[str], overrides: Overrides = Overrides()) -> Settings:
    """Settings from one config file (None = defaults) with the command line on top:
    `--select` replaces the file's select, `--ignore`/`--extend-select`/`--extend-exclude`
    add to it, `--exclude` replaces the file's exclude."""
    values: Dict[str, Any] = {}
    root = ""
    if config_file is not None:
        table = read_table(config_file)
        if table is None:
            raise ConfigError(f"{config_file}: no [tool.kvlint] table")
        values = parse_table(table, config_file)
        root = os.path.dirname(os.path.abspath(config_file))
    select = overrides.select if overrides.select is not None else values.get("select", ())
    exclude = overrides.exclude if overrides.exclude is not None else values.get("exclude", ())
    per_file = overrides.per_file_ignores if overrides.per_file_ignores is not None else \
        values.get("per_file_ignores", ())
    return Settings(
        select=tuple(select),
        ignore=tuple(values.get("ignore", ())) + tuple(overrides.ignore),
        extend_select=tuple(values.get("extend_select", ())) + tuple(overrides.extend_select),
        severity=values.get("severity", {}),
        names=values.get("names", HeuristicNames()),
        exclude=tuple(exclude),
        extend_exclude=tuple(values.get("extend_exclude", ())) + tuple(overrides.extend_exclude),
        per_file_ignores=tuple(per_file) + tuple(overrides.extend_per_file_ignores),
        root=root,
        config_file=os.path.abspath(config_file) if config_file else "",
        preview=overrides.preview if overrides.preview is not None else values.get("preview", False),
    )


class Resolver:
    """Settings for each checked file, loading each config file once."""

    def __init__(self, config: Optional[str] = None, isolated: bool = False,
                 overrides: Overrides = Overrides()):
        self.config = config
        self.isolated = isolated
        self.overrides = overrides
        self._dirs: Dict[str, Optional[str]] = {}
        # a walked file's folder, as the walk spells it -> its config (one look-up per file)
        self._folders: Dict[str, Optional[str]] = {}
        self._settings: Dict[Optional[str], Settings] = {}
        if config is not None and not os.path.isfile(config):
            raise ConfigError(f"{config}: no such config file")

    def config_for(self, path: str) -> Optional[str]:
        if self.isolated:
            return None
        if self.config is not None:
            return self.config
        return find_config(path, self._dirs)

    def settings_for(self, path: str, folder: Optional[str] = None) -> Settings:
        """`folder`: the folder holding `path` when the caller knows `path` is no folder (the
        walk): its files then share one config look-up, without a stat per file."""
        if folder is None:
            cfg = self.config_for(path)
        elif folder in self._folders:
            cfg = self._folders[folder]
        else:
            cfg = self._folders[folder] = self.config_for(folder or ".")
        if cfg not in self._settings:
            self._settings[cfg] = load_settings(cfg, self.overrides)
        return self._settings[cfg]


# -- applying exclude / per-file-ignores ----------------------------------------------------
def _relative(path: str, root: str) -> str:
    full = os.path.abspath(path)
    base = root or os.getcwd()
    try:
        rel = os.path.relpath(full, base)
    except ValueError:  # another drive on Windows
        rel = full
    return rel.replace(os.sep, "/")


def glob_matches(pattern: str, path: str, root: str) -> bool:
    """ruff-like: a pattern without "/" matches any component of the path (so "tests" or
    "*_pb2.py" match anywhere); one with "/" matches the path relative to `root`, and a
    folder pattern matches everything below it."""
    rel = _relative(path, root)
    pattern = pattern.rstrip("/")
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in rel.split("/"))
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:i]), pattern) for i in range(1, len(parts)))


def is_excluded(path: str, settings: Settings) -> bool:
    return exclusion(path, settings) is not None


def exclusion(path: str, settings: Settings) -> Optional[Tuple[str, str]]:
    """(key, pattern) of the first `exclude`/`extend-exclude` pattern matching `path`, else None."""
    for key, patterns in (("exclude", settings.exclude), ("extend-exclude", settings.extend_exclude)):
        for p in patterns:
            if glob_matches(p, path, settings.root):
                return key, p
    return None


def ignored_codes(path: str, settings: Settings) -> Tuple[str, ...]:
    out: Tuple[str, ...] = ()
    for glob, codes in settings.per_file_ignores:
        if glob_matches(glob, path, settings.root):
            out += codes
    return out


def drop_ignored(findings, path: str, settings: Settings):
    codes = ignored_codes(path, settings)
    if not codes:
        return findings
    return [f for f in findings if not code_matches(f.code, codes)]


# -- --show-settings ------------------------------------------------------------------------
def show(settings: Settings, path: str) -> str:
    def toml_list(items) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    lines = [f"# resolved settings for {path}",
             f"# config file: {settings.config_file or '(none: defaults)'}",
             "[tool.kvlint]",
             f"select = {toml_list(settings.select)}",
             f"ignore = {toml_list(settings.ignore)}",
             f"extend-select = {toml_list(settings.extend_select)}",
             f"exclude = {toml_list(settings.exclude)}",
             f"extend-exclude = {toml_list(settings.extend_exclude)}",
             f"preview = {'true' if settings.preview else 'false'}",
             "", "[tool.kvlint.per-file-ignores]"]
    lines += [f'"{glob}" = {toml_list(codes)}' for glob, codes in settings.per_file_ignores]
    lines += ["", "[tool.kvlint.severity]"]
    lines += [f'{code} = "{level}"' for code, level in sorted(settings.severity.items())]
    lines += ["", "[tool.kvlint.heuristics]"]
    for field in dataclasses.fields(HeuristicNames):
        lines.append(f"{field.name.replace('_', '-')} = {toml_list(getattr(settings.names, field.name))}")
    from kvlint.catalog import load_catalog
    from kvlint.checks import all_rules

    catalog = load_catalog()
    enabled = sorted(r.code for r in all_rules()
                     if settings.enabled(r.code, catalog.rules[r.code].enabled_by_default
                                         if r.code in catalog.rules else True,
                                         r.code in catalog.rules and catalog.rules[r.code].preview))
    lines += ["", f"# enabled rules: {', '.join(enabled)}"]
    if not os.path.isdir(path):
        dropped = ignored_codes(path, settings)
        in_effect = [c for c in enabled if not code_matches(c, dropped)]
        pairs = [(g, c) for g, c in settings.per_file_ignores if glob_matches(g, path, settings.root)]
        lines += [f"# per-file-ignores matching {path}: "
                  + (", ".join(f'"{g}" = {toml_list(c)}' for g, c in pairs) if pairs else "(none)"),
                  f"# rules in effect for {path}: {', '.join(in_effect) or '(none)'}"]
        reason = exclusion(path, settings)
        if reason:
            lines.append(f"# {path} is excluded by `{reason[0]}` pattern \"{reason[1]}\" "
                         f"(checked only when named without --force-exclude)")
    return "\n".join(lines) + "\n"
