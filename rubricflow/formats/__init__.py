"""Rubric formats: the native format, importers for five source systems, and the loader."""

from rubricflow.formats.base import ImportResult, RubricFormat, allowing_code
from rubricflow.formats.loader import (
    LoadedFile,
    detect_format,
    load_document,
    load_file,
    load_rubric,
)
from rubricflow.formats.native import dump_rubric, dump_rubrics

__all__ = [
    "ImportResult",
    "LoadedFile",
    "RubricFormat",
    "allowing_code",
    "detect_format",
    "dump_rubric",
    "dump_rubrics",
    "load_document",
    "load_file",
    "load_rubric",
]
