"""Finding the rubric a test names: a file path, or `id[@version]` looked up in the rubric
files of `--rubric-dir` / `rubric_paths` first (the rubrics the repository ships are the
ones its tests mean), then in the store of `--rubric-db`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rubricflow.errors import ConfigurationError, NotFoundError, RubricflowError
from rubricflow.formats.loader import load_file, load_rubric
from rubricflow.model import Rubric, semver_key
from rubricflow.sync_bridge import run_sync

__all__ = ["RUBRIC_SUFFIXES", "RubricLookup", "split_ref"]

RUBRIC_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


def split_ref(ref: str) -> tuple[str, str | None]:
    """`id@version` as (id, version); `id` as (id, None)."""
    rubric_id, at, version = ref.strip().partition("@")
    return rubric_id.strip(), (version.strip() or None) if at else None


def _version_order(version: str) -> tuple[int, tuple[object, ...] | str]:
    try:
        return (1, semver_key(version))
    except ValueError:  # not semver: after every semver version, by text
        return (0, version)


class RubricLookup:
    """Rubric files (loaded once, on the first lookup) and an optional store."""

    def __init__(self, paths: Sequence[Path], *, db: str | None = None) -> None:
        self.paths = list(paths)
        self.db = db
        self._index: dict[str, dict[str, Rubric]] | None = None
        self._by_file: dict[Path, Rubric] = {}
        self._from_store: dict[tuple[str, str | None], Rubric] = {}

    def _files(self) -> list[Path]:
        found: list[Path] = []
        for path in self.paths:
            if path.is_dir():
                found += sorted(
                    p for p in path.rglob("*") if p.is_file() and p.suffix in RUBRIC_SUFFIXES
                )
            elif path.is_file():
                found.append(path)
            else:
                raise ConfigurationError(
                    f"rubric path {path} does not exist; fix --rubric-dir or the ini "
                    "option rubric_paths"
                )
        return found

    def index(self) -> dict[str, dict[str, Rubric]]:
        """Every rubric in the rubric files, by id then version."""
        if self._index is None:
            index: dict[str, dict[str, Rubric]] = {}
            for file in self._files():
                for rubric in load_file(file).rubrics:
                    index.setdefault(rubric.id, {})[rubric.version] = rubric
            self._index = index
        return self._index

    def resolve(self, ref: str | Path, *, base: Path | None = None) -> Rubric:
        """The rubric `ref` names: a path to a rubric file (relative to `base`, the test
        file's folder, or the working directory), else `id[@version]` (the highest
        version when none is given)."""
        path = self._as_path(ref, base)
        if path is not None:
            resolved = path.resolve()
            if resolved not in self._by_file:
                self._by_file[resolved] = load_rubric(resolved)
            return self._by_file[resolved]
        rubric_id, version = split_ref(str(ref))
        if not rubric_id:
            raise ConfigurationError(
                f"rubric reference {ref!r} names no rubric; write 'id@version'"
            )
        versions = self.index().get(rubric_id, {})
        if version is not None and version in versions:
            return versions[version]
        if version is None and versions:
            return versions[max(versions, key=_version_order)]
        if self.db is not None:
            found = self._lookup_store(rubric_id, version)
            if found is not None:
                return found
        raise ConfigurationError(self._not_found(rubric_id, version, versions))

    @staticmethod
    def _as_path(ref: str | Path, base: Path | None) -> Path | None:
        if isinstance(ref, Path):
            return ref if ref.is_absolute() or base is None else base / ref
        text = ref.strip()
        if not text.endswith(RUBRIC_SUFFIXES) and "/" not in text and "\\" not in text:
            return None
        candidates = [Path(text)] if Path(text).is_absolute() else []
        if base is not None:
            candidates.append(base / text)
        candidates.append(Path.cwd() / text)
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        raise ConfigurationError(
            f"rubric file {text} not found (looked in {', '.join(str(c) for c in candidates)}); "
            "give a path relative to the test file, or 'id@version' with --rubric-dir"
        )

    def _lookup_store(self, rubric_id: str, version: str | None) -> Rubric | None:
        key = (rubric_id, version)
        if key not in self._from_store:
            from rubricflow.application import Application

            async def get() -> Rubric | None:
                app = await Application.open(
                    self.db, existing=True, remedy="give an existing store with --rubric-db URL"
                )
                try:
                    return await app.rubrics.get(rubric_id, version)
                except NotFoundError:
                    return None
                finally:
                    await app.close()

            try:
                found = run_sync(get())
            except RubricflowError as error:
                raise ConfigurationError(f"--rubric-db {self.db}: {error}") from None
            if found is None:
                return None
            self._from_store[key] = found
        return self._from_store[key]

    def _not_found(self, rubric_id: str, version: str | None, versions: dict[str, Rubric]) -> str:
        wanted = f"{rubric_id}@{version}" if version else rubric_id
        places = [str(p) for p in self.paths] or ["no rubric files (none configured)"]
        where = "rubric files in " + ", ".join(places)
        if self.db is not None:
            where += f" and the store {self.db}"
        have = ""
        if versions:
            have = (
                f" (found {rubric_id} versions {', '.join(sorted(versions, key=_version_order))})"
            )
        return (
            f"rubric {wanted} not found: looked in {where}{have}. Add its folder with "
            "--rubric-dir DIR or the ini option rubric_paths, use --rubric-db URL, or "
            "mark the test with the rubric file's path"
        )
