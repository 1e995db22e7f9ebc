"""Grammar IR: byte-level regular expressions with intersection, complement and rule references.

Nodes are frozen, hashable dataclasses (hashes are cached, so deep trees are cheap
to use as dictionary keys; hashing and comparing walk without recursion, since lowered IR
nests past Python's stack limit).  Build them with the helper constructors (`lit`, `seq`,
`alt`, `repeat`, and `ir_chars.chars`, `regex`...), which normalise as they go.  `Grammar` names
rules; `RuleRef` refers to one.  In this (regular) compiler, references that do not
form a cycle are inlined and a cycle raises `RecursionNotSupportedError`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from types import MappingProxyType

from formwork.grammar._nfa_build import alt_of, install_eq, install_hash, seq_of
from formwork.grammar.errors import GrammarError, UndefinedRuleError
from formwork.grammar.ir_identity import composite_eq, composite_hash, sub_nodes_getter


def _node(cls):
    """Make `cls` a frozen dataclass with slots (no per-node dict: lowering builds thousands of
    nodes) whose hash is computed once and cached in the `_hash` slot; `_empty` caches whether
    its language is empty (read and written by the C NFA builder, `_nfa_build.c`).  `hash(node)`
    runs in C, without a Python frame, but where the Python `__hash__` computes the first hash of
    a node (`_nfa_build.install_hash`)."""
    cls.__annotations__ = {**cls.__dict__.get("__annotations__", {}), "_hash": "int | None",
                           "_empty": "bool | None"}
    cls._hash = field(default=None, init=False, repr=False, compare=False)
    cls._empty = field(default=None, init=False, repr=False, compare=False)
    cls = dataclass(frozen=True, slots=True, repr=False)(cls)
    sub_nodes, scalars = _COMPOSITE.get(cls.__name__, (None, None))
    if sub_nodes is not None:
        cls._sub_nodes = staticmethod(sub_nodes_getter(sub_nodes))
        cls._scalars = staticmethod(attrgetter(*scalars)) if scalars else None
        cls.__eq__ = composite_eq(sub_nodes, scalars)
    cls.__hash__ = _cached_hash(cls)
    # hash() in C: the cached hash, else the same one made there or by the `__hash__` above
    install_hash(cls, _compared(cls), hash(cls.__name__))
    install_eq(cls)  # == in C: the same structural equality as the `__eq__` above
    return cls


def _compared(cls: type) -> tuple[str, ...]:
    """The names of the fields a node class compares and hashes, in order."""
    return tuple(f.name for f in fields(cls) if f.compare)


def _cached_hash(cls: type) -> Callable[[object], int]:
    """The `__hash__` of a node class: the hash of its compared fields (the field itself when
    there is one, else their tuple) mixed with the class name, computed on first use and kept in
    the `_hash` slot.  One Python-level call per node (a dataclass's generated hash, wrapped,
    costs two, and hashing a whole lowered schema calls it once per node); a class with sub-nodes
    makes theirs first without recursion (`ir_identity`)."""
    names = _compared(cls)
    fields_of = attrgetter(*names) if names else (lambda node: ())
    salt = hash(cls.__name__)
    set_hash = cls.__dict__["_hash"].__set__

    if cls._sub_nodes is not None:
        return composite_hash(fields_of, salt, set_hash)

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(fields_of(self)) ^ salt
            set_hash(self, cached)
        return cached

    return __hash__


# the sub-node fields and the other compared fields of the classes with sub-nodes (`ir_identity`)
_COMPOSITE = {"Seq": (("items",), None), "Alt": (("items",), None), "Repeat": (("item",), ("min", "max")),
              "And": (("a", "b"), None), "Not": (("a",), ("over_bytes",))}


class Node:
    """Base class of IR nodes; each denotes a set of byte strings."""

    __slots__ = ()
    _sub_nodes: Callable[["Node"], tuple] | None = None  # see `ir_identity` (None: a leaf)
    _scalars: Callable[["Node"], object] | None = None

    def __repr__(self) -> str:
        return _bounded_repr(self, REPR_DEPTH)


REPR_DEPTH = 4  # levels of sub-nodes a repr shows: a shared graph's full repr grows with its paths
REPR_ITEMS = 8  # items of a Seq/Alt a repr shows


def _bounded_repr(node: Node, depth: int) -> str:
    """`Type(field=value, ...)` with sub-nodes shown `depth` levels down (then `...`), leaves in full."""
    parts = []
    for f in fields(node):
        if f.repr:
            parts.append(f"{f.name}={_field_repr(getattr(node, f.name), depth)}")
    return f"{type(node).__name__}({', '.join(parts)})"


def _field_repr(value: object, depth: int) -> str:
    if isinstance(value, Node):
        return _bounded_repr(value, depth - 1) if depth > 0 else "..."
    if isinstance(value, tuple) and value and isinstance(value[0], Node):
        if depth <= 0:
            return f"(...{len(value)} nodes)"
        shown = [_bounded_repr(item, depth - 1) for item in value[:REPR_ITEMS]]
        more = f", ...{len(value) - REPR_ITEMS} more" if len(value) > REPR_ITEMS else ""
        return f"({', '.join(shown)}{more})"
    return repr(value)


@_node
class Empty(Node):
    """Matches only the empty string."""


@_node
class Nothing(Node):
    """Matches no string at all."""


@_node
class Bytes(Node):
    """Matches exactly `value`."""

    value: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.value, bytes):
            raise TypeError(f"Bytes needs bytes, got {type(self.value).__name__}")


@_node
class ByteSet(Node):
    """Matches one byte inside any of the inclusive `ranges` (normalised: sorted, merged)."""

    ranges: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if type(self.ranges) is tuple and _normalised(self.ranges):
            return
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(tuple(r) for r in self.ranges):
            if not (0 <= lo <= hi <= 255):
                raise GrammarError(f"invalid byte range ({lo}, {hi})")
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        object.__setattr__(self, "ranges", tuple(merged))


def _normalised(ranges: tuple) -> bool:
    """Whether `ranges` already are sorted, disjoint, non-adjacent (lo, hi) tuples within 0..255."""
    prev = -2
    for r in ranges:
        if type(r) is not tuple or len(r) != 2:
            return False
        lo, hi = r
        if not (prev + 1 < lo <= hi <= 255):
            return False
        prev = hi
    return True


def ByteRange(lo: int, hi: int) -> ByteSet:  # noqa: N802 - reads as a node constructor
    """A single inclusive byte range."""
    return ByteSet(((lo, hi),))


@_node
class Seq(Node):
    """Concatenation of `items`."""

    items: tuple[Node, ...]


@_node
class Alt(Node):
    """Union of `items`."""

    items: tuple[Node, ...]


@_node
class Repeat(Node):
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: Node
    min: int = 0
    max: int | None = None

    def __post_init__(self) -> None:
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise GrammarError(f"invalid repetition bounds {{{self.min},{self.max}}}")


@_node
class And(Node):
    """Intersection of two languages."""

    a: Node
    b: Node


@_node
class Not(Node):
    """Complement of `a` with respect to all valid UTF-8 strings (`over_bytes`: to all byte
    strings, e.g. free text that only has to avoid some strings)."""

    a: Node
    over_bytes: bool = False


@_node
class RuleRef(Node):
    """Reference to the grammar rule `name`."""

    name: str


@dataclass(frozen=True)
class Grammar:
    """Named rules and a start rule."""

    rules: Mapping[str, Node]
    start: str
    _frozen: tuple = field(init=False, repr=False, compare=True)

    def __post_init__(self) -> None:
        if self.start not in self.rules:
            raise UndefinedRuleError(f"start rule {self.start!r} is not defined")
        for name, node in self.rules.items():
            if not isinstance(node, Node):
                raise GrammarError(f"rule {name!r} is {type(node).__name__}, not an IR Node")
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))
        object.__setattr__(self, "_frozen", tuple(sorted(self.rules.items())))

    def __hash__(self) -> int:
        return hash((self._frozen, self.start))


# ---------------------------------------------------------------- helpers

EMPTY = Empty()
NOTHING = Nothing()


def _maker(cls: type, name: str) -> Callable[[object], Node]:
    """A constructor of `cls` nodes from an already valid `name` field, filling the slots
    directly: the helpers below make most nodes, and a frozen dataclass's checked `__init__`
    costs about twice as much."""
    new = object.__new__
    set_field = cls.__dict__[name].__set__
    set_hash = cls.__dict__["_hash"].__set__
    set_empty = cls.__dict__["_empty"].__set__

    def make(value: object) -> Node:
        node = new(cls)
        set_field(node, value)
        set_hash(node, None)
        set_empty(node, None)
        return node

    return make


_make_bytes = _maker(Bytes, "value")
_make_seq = _maker(Seq, "items")
_make_alt = _maker(Alt, "items")


def lit(text: str | bytes) -> Node:
    """The literal string (UTF-8 encoded) or bytes."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return _make_bytes(data) if data else EMPTY


def seq(*items: Node) -> Node:
    """Concatenation, flattened; adjacent literals merged; Nothing absorbs.  The common case
    runs in C (`_nfa_build.seq_of`, a few times faster: lowering calls this most); `_seq` is the
    same in Python, and does the rest (a Nothing, an empty result, malformed nodes)."""
    got = seq_of(items)
    return got if got is not None else _seq(items)


def _seq(items: tuple[Node, ...]) -> Node:
    """`seq` in Python."""
    flat: list[Node] = []
    run: bytes | None = None  # the pending run of adjacent literals, merged into one Bytes ...
    single: Node | None = None  # ... or its only literal, kept as it is
    for item in items:
        kind = type(item)
        if kind is Bytes:
            if run is None:
                run, single = item.value, item
            else:
                run, single = run + item.value, None
            continue
        if kind is Seq:
            # already normal (no Empty/Nothing, no adjacent literals): only its ends may merge
            parts = item.items
            head, tail = parts[0], parts[-1]
            if type(head) is Bytes:
                if run is None:
                    run, single = head.value, head
                else:
                    run, single = run + head.value, None
                parts = parts[1:]
            if run is not None:
                flat.append(single if single is not None else _make_bytes(run))
                run = None
            if type(tail) is Bytes:
                flat.extend(parts[:-1])
                run, single = tail.value, tail
            else:
                flat.extend(parts)
            continue
        if kind is Empty:
            continue
        if kind is Nothing:
            return NOTHING
        if run is not None:
            flat.append(single if single is not None else _make_bytes(run))
            run = None
        flat.append(item)
    if run is not None:
        flat.append(single if single is not None else _make_bytes(run))
    if not flat:
        return EMPTY
    return flat[0] if len(flat) == 1 else _make_seq(tuple(flat))


def alt(*items: Node) -> Node:
    """Union, flattened and de-duplicated; Nothing dropped.  The common case runs in C
    (`_nfa_build.alt_of`); `_alt` is the same in Python, and does the rest."""
    got = alt_of(items)
    return got if got is not None else _alt(items)


def _alt(items: tuple[Node, ...]) -> Node:
    """`alt` in Python."""
    if len(items) == 1:
        kind = type(items[0])
        if kind is not Alt and kind is not Nothing:
            return items[0]
    flat: dict[Node, None] = {}
    for item in items:
        kind = type(item)
        if kind is Alt:
            for part in item.items:
                if type(part) is not Nothing:
                    flat[part] = None
        elif kind is not Nothing:
            flat[item] = None
    if not flat:
        return NOTHING
    nodes = tuple(flat)
    return nodes[0] if len(nodes) == 1 else _make_alt(nodes)


def repeat(node: Node, lo: int = 0, hi: int | None = None) -> Node:
    """`node` repeated lo..hi times (hi=None: unbounded)."""
    if lo < 0 or (hi is not None and hi < lo):
        raise GrammarError(f"invalid repetition bounds {{{lo},{hi}}}")
    if hi == 0 or isinstance(node, Empty):
        return EMPTY
    if isinstance(node, Nothing):
        return EMPTY if lo == 0 else NOTHING
    if lo == hi == 1:
        return node
    return Repeat(node, lo, hi)


def optional(node: Node) -> Node:
    """Zero or one `node`."""
    return repeat(node, 0, 1)


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of a composite node (none for leaves and rule references)."""
    if isinstance(node, (Seq, Alt)):
        return node.items
    if isinstance(node, Repeat):
        return (node.item,)
    if isinstance(node, And):
        return (node.a, node.b)
    if isinstance(node, Not):
        return (node.a,)
    return ()


def map_children(node: Node, f: Callable[[Node], Node]) -> Node:
    """`node` rebuilt (and simplified) with `f` applied to each direct sub-node; leaves unchanged."""
    if isinstance(node, Seq):
        return seq(*(f(x) for x in node.items))
    if isinstance(node, Alt):
        return alt(*(f(x) for x in node.items))
    if isinstance(node, Repeat):
        return repeat(f(node.item), node.min, node.max)
    if isinstance(node, And):
        return And(f(node.a), f(node.b))
    if isinstance(node, Not):
        return Not(f(node.a), node.over_bytes)
    return node
