"""`load_schema` and `SchemaDocument`: a checked, resolvable, analysed JSON Schema."""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from formwork.schemas.analysis import Analysis, analyse
from formwork.schemas.cycles import elementary_cycles, non_descending_cycle, ref_graph
from formwork.schemas.deep import call_with_depth
from formwork.schemas.dialects import declared_draft, translate
from formwork.schemas.drafts import DRAFT_2020_12_SPEC, Draft, draft_named, draft_of
from formwork.schemas.errors import UnsupportedKeywordError
from formwork.schemas.metaschema import check_meta_schema
from formwork.schemas.normalize import NormalizedSchema, normalize
from formwork.schemas.pointer import child
from formwork.schemas.problems import Problem, Severity
from formwork.schemas.refs import RefIndex, ResolvedRef, SchemaRegistry
from formwork.schemas.source import MAX_DEPTH, MAX_SOURCE_BYTES, Source, load_source_with_depth

if TYPE_CHECKING:
    from referencing._core import Resolver  # the public type, defined privately


class SchemaDocument:
    """A JSON Schema that passed its meta-schema and whose reachable `$ref`s all resolve.

    `schema` is the (copied) schema as `draft` (2020-12 or draft-07) says it, `declared` the
    dialect it declared (draft-04, draft-06 and 2019-09 schemas are translated into `draft`, see
    `formwork.schemas.dialects`; an unknown `$schema` URI is inferred from the keywords),
    `resolver` a `referencing.Resolver` over the document and the registry, `label` where it came
    from.
    """

    def __init__(self, schema: Any, draft: Draft, index: RefIndex, analysis: Analysis, label: str,
                 depth: int = 0, *, declared: Draft | None = None,
                 dialect_problems: list[Problem] | None = None) -> None:
        self.schema = schema
        self.draft = draft
        self.declared = declared or draft
        self.label = label
        self._index = index
        self._analysis = analysis
        self._depth = depth  # nesting depth of `schema`, for recursive passes over it
        self._dialect_problems = dialect_problems or []  # an inferred draft, dropped keywords

    def __repr__(self) -> str:
        return f"SchemaDocument({self.label!r}, draft={self.declared.name!r})"

    @property
    def resolver(self) -> Resolver[Any]:
        """The resolver for the root (base URI: the root `$id`, else "")."""
        return self._index.resolver

    @property
    def analysis(self) -> Analysis:
        """What the traversal from the root found (targets, `$ref` sites, problems)."""
        return self._analysis

    @property
    def registry_uris(self) -> list[str]:
        """URIs of the documents `$ref`s may reach besides the root: the registry and the
        bundled 2020-12 / draft-07 meta-schemas."""
        return sorted(uri for uri in self._index.documents if uri != self._index.root_uri)

    def lookup(self, ref: str, resolver: Resolver[Any] | None = None, *,
               dynamic: bool = False) -> ResolvedRef:
        """Resolve `ref` (local pointer, `$defs`/`definitions`, `$anchor`, `$id`-relative or
        registry URI) against `resolver` (the root's by default): `(subschema, resolver,
        pointer)`; `UnresolvableRefError` when it points nowhere. `dynamic`: `ref` is a
        `$dynamicRef` (see `RefIndex.resolve_dynamic`)."""
        return self._index.lookup(ref, resolver, dynamic=dynamic)

    def enter(self, subschema: Any, resolver: Resolver[Any] | None) -> Resolver[Any] | None:
        """The resolver to use inside `subschema` (it may set a new base URI with `$id`); None
        stands for the root's."""
        if not isinstance(subschema, dict) or ("$id" not in subschema and "$schema" not in subschema):
            return resolver  # the common case, without looking up the draft
        return self._index.enter(subschema, resolver, draft_of(subschema, self.draft).specification)

    def ref_cycles(self) -> list[list[str]]:
        """Each elementary `$ref` cycle as the JSON pointers (or `uri#pointer`) of its `$ref`
        keywords, starting at the smallest; at most `cycles.MAX_CYCLES`."""
        return [[child(self._index.display(site), "$ref") for site in cycle]
                for cycle in self._cycles]

    @property
    def has_ref_cycles(self) -> bool:
        """True when the schema is recursive."""
        return bool(self._cycles)

    @cached_property
    def _cycles(self) -> list[list[Any]]:
        return elementary_cycles(ref_graph(self._analysis))

    def normalized(self) -> NormalizedSchema:
        """The normalised form for the compiler (see `formwork.schemas.normalize`), built on first
        use (compiling a schema does not need it)."""
        return self._normalized

    @cached_property
    def _normalized(self) -> NormalizedSchema:
        return call_with_depth(
            lambda: normalize(self._analysis, self._index, self.schema, self.draft), self._depth)

    def unsupported(self) -> list[Problem]:
        """Keywords reached from the root that formwork cannot enforce (errors), keywords the
        draft does not define or that have no effect and a `$schema` whose draft was inferred
        (warnings), each with its JSON pointer."""
        return self._dialect_problems + self._analysis.problems

    def problems(self, *, lenient: bool = False) -> list[Problem]:
        """Everything to tell a user: `unsupported()` (errors become warnings when `lenient`),
        infos for unsupported keywords in definitions no `$ref` reaches, an error for a
        reference cycle that never descends into the instance, and one info per reference
        cycle (recursion is supported)."""
        found = [p.as_warning() if lenient else p for p in self.unsupported()]
        found.extend(self._analysis.unreached)
        graph = ref_graph(self._analysis)
        stuck = non_descending_cycle(graph)
        if stuck is not None:
            path = " -> ".join(child(self._index.display(site), "$ref") for site in stuck)
            found.append(Problem(child(self._index.display(stuck[0]), "$ref"), "$ref",
                                 f"reference cycle that never descends into the instance "
                                 f"(validation would not terminate): {path}", Severity.ERROR))
        for cycle in self.ref_cycles():
            found.append(Problem(cycle[0], "$ref", "recursive reference cycle: "
                                 + " -> ".join(cycle + cycle[:1]), Severity.INFO))
        return found

    def require_enforceable(self, *, lenient: bool = False) -> list[Problem]:
        """Raise `UnsupportedKeywordError` if `problems(lenient=...)` has errors; else return
        the problems (warnings and infos)."""
        found = self.problems(lenient=lenient)
        errors = [p for p in found if p.severity is Severity.ERROR]
        if errors:
            raise UnsupportedKeywordError(errors)
        return found


def load_schema(source: Source, *, registry: Mapping[str, Any] | SchemaRegistry | None = None,
                draft: str | None = None, max_bytes: int = MAX_SOURCE_BYTES,
                max_depth: int = MAX_DEPTH) -> SchemaDocument:
    """Load, check and analyse a schema.

    `source`: a dict or bool, JSON text, bytes, or a path (str or Path). `registry`: other
    documents by URI (dicts/bools) that `$ref`s may name, or a `SchemaRegistry` built once for
    many loads; nothing is fetched from the network.
    `draft`: the dialect when the schema has no `$schema` ("2020-12" by default; "2019-09",
    "draft-07", "draft-06" or "draft-04").

    Raises a `SchemaError` subclass: `SchemaFileError`, `InvalidJSONError`,
    `SchemaTooLargeError`/`SchemaTooDeepError`, `UnknownDraftError`, `MetaSchemaError`,
    `UnresolvableRefError`.
    """
    schema, label, depth = load_source_with_depth(source, max_bytes=max_bytes, max_depth=max_depth)
    default = draft_named(draft) if draft is not None else DRAFT_2020_12_SPEC
    declared, problems = declared_draft(schema, default)
    dialect = declared.target
    if registry is not None and not isinstance(registry, SchemaRegistry):
        registry = SchemaRegistry(registry, default_draft=declared, max_depth=max_depth)

    def checked() -> tuple[Any, RefIndex, Analysis]:
        check_meta_schema(schema, declared)
        translated, dropped = translate(schema, declared)
        problems.extend(dropped)
        index = RefIndex(translated, dialect, registry)
        return translated, index, analyse(index, translated, dialect)

    translated, index, analysis = call_with_depth(checked, depth)
    return SchemaDocument(translated, dialect, index, analysis, label, depth, declared=declared,
                          dialect_problems=problems)
