"""What every machine file shares, whatever its kind: the header (name, sources, estimated fields) and the reading
of YAML files and pydantic errors into gemmsim's messages (file, line, field path)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from gemmsim.schema import Strict


class MachineHeader(Strict):
    """The fields every machine file starts with, whatever its kind."""

    schema_version: Literal[1] = Field(description="Version of the machine-file schema.")
    name: str = Field(description="Short name, as used on the command line.")
    description: str = Field("", description="What this machine is.")
    sources: list[str] = Field(default_factory=list, description="Public sources the numbers come from.")
    estimated: list[str] = Field(
        default_factory=list,
        description="Field paths whose values are estimates (or teaching choices) rather than readings or citations.",
    )

    @model_validator(mode="after")
    def _estimated_paths_exist(self) -> "MachineHeader":
        bad = [p for p in self.estimated if not _resolves(self, p)]
        if bad:
            raise ValueError(f"estimated: no such field(s): {', '.join(bad)}")
        return self


_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


def _resolves(obj, path: str) -> bool:
    """Whether a field path such as ``caches[2].latency_cycles`` or ``l2.ways`` names a field of ``obj``."""
    for part in path.split("."):
        m = _PART.match(part)
        if not m or not isinstance(obj, BaseModel) or m.group(1) not in type(obj).model_fields:
            return False
        obj = getattr(obj, m.group(1))
        for idx in re.findall(r"\[(\d+)\]", m.group(2)):
            if not isinstance(obj, (list, tuple)) or int(idx) >= len(obj):
                return False
            obj = obj[int(idx)]
    return True


def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("cpu", "gpu", "systolic") and not out:
            continue  # the union's tag, not a field
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def validation_problems(err: ValidationError, data: object = None) -> list[str]:
    """Turn a pydantic ValidationError into one 'field.path: message' line per problem."""
    lines = []
    for e in err.errors():
        loc = _format_loc(tuple(e["loc"]))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not in the schema)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        lines.append(f"{loc}: {msg}")
    return lines


#: YAML files larger than this are refused before parsing (a machine or experiment file is a few KiB).
MAX_YAML_BYTES = 16 << 20

#: nodes a YAML document may expand to once its aliases are followed (a "billion laughs" file is refused).
MAX_YAML_NODES = 1_000_000


class _DuplicateKey(yaml.constructor.ConstructorError):
    """A key given twice in one mapping."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping, naming both lines."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = self.construct_object(key_node, deep=True)
                    hash(key)
                except (TypeError, yaml.YAMLError):
                    continue  # the base class reports unhashable keys
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise _DuplicateKey(
                        None, None, f"duplicate key {key!r}: given on lines {seen[key]} and {line}; keep one",
                        key_node.start_mark,
                    )
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_nodes(root) -> int:
    """How many nodes the document has once every alias is expanded (shared nodes counted each time they are used)."""
    memo: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in memo:
            continue
        kids = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [x for kv in node.value for x in kv]
        if done or not kids:
            memo[id(node)] = 1 + sum(memo.get(id(k), 1) for k in kids)
            if memo[id(node)] > MAX_YAML_NODES:
                return memo[id(node)]
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in memo)
    return memo.get(id(root), 0)


def decode_text(data: bytes, source: str, error: type) -> str:
    """UTF-8 text of a file (an initial byte-order mark is dropped); a bad byte is reported with its offset and line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 4].hex(" ")
        raise error(
            f"not UTF-8 text: byte offset {exc.start} (line {line}) starts with bytes {bad}; save the file as UTF-8",
            source=source,
        ) from None


def read_yaml(path: Path, error: type) -> object:
    """Read a YAML file strictly, turning every problem into ``error`` naming the file (and line where there is one).

    Strict: UTF-8 only (a bad byte is reported with its offset), a key given twice is an error naming both lines,
    files over MAX_YAML_BYTES and documents whose aliases expand past MAX_YAML_NODES nodes are refused.
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise error("is a folder, not a file", source=str(path))
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise error(f"file is {size} bytes; a YAML file of gemmsim is at most {MAX_YAML_BYTES} bytes", source=str(path))
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None
    text = decode_text(data, str(path), error)
    loader = None
    try:
        loader = _StrictLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_nodes(node)
        if n > MAX_YAML_NODES:
            raise error(f"YAML aliases expand to more than {MAX_YAML_NODES} nodes; write the values out", source=str(path))
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.reader.ReaderError):
            problem = f"character #x{exc.character:04x} at character offset {exc.position} is not allowed in YAML"
        raise error(problem if isinstance(exc, _DuplicateKey) else f"malformed YAML: {problem}", source=where) from None
    except RecursionError:
        raise error("malformed YAML: nested too deeply", source=str(path)) from None
    finally:
        if loader is not None:
            loader.dispose()
