"""`$ref` resolution with `referencing`: the documents a schema can reach (the root and a
registry of others, never the network) and the location of every object in them."""
from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote, urldefrag

from attrs import evolve
import referencing.exceptions
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Registry, Resource, Specification

from formwork.schemas.dialects import declared_draft, translate
from formwork.schemas.drafts import DRAFT_2020_12_SPEC, Draft
from formwork.schemas.errors import DynamicRefError, UnknownDraftError, UnresolvableRefError
from formwork.schemas.pointer import InvalidPointerError, child, from_fragment, split_pointer
from formwork.schemas import resolvers
from formwork.schemas.resolvers import evolved, resolver_with_root
from formwork.schemas.source import MAX_DEPTH, checked_copy

if TYPE_CHECKING:
    from referencing._core import Resolver  # the public type, defined privately


_ABSENT = object()  # a pointer token naming no member


class Location(NamedTuple):
    """Where a subschema sits: the URI of its document ("" for an anonymous root) and a JSON
    pointer inside it (a named tuple: made, hashed and compared in C, once per subschema an
    analysis visits)."""

    uri: str
    pointer: str


class ResolvedRef(NamedTuple):
    """A resolved `$ref`: the target subschema, the resolver to use inside it (its base URI),
    and its location: a JSON pointer in the root document, or `uri#pointer` elsewhere."""

    schema: Any
    resolver: Resolver[Any]
    pointer: str


_METASCHEMA_PREFIXES = ("https://json-schema.org/draft/2020-12/", "https://json-schema.org/draft/2019-09/",
                        "http://json-schema.org/draft-07/", "http://json-schema.org/draft-06/",
                        "http://json-schema.org/draft-04/")


def _no_network(uri: str) -> Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)


def _specification(contents: Any, default: Specification[Any]) -> Specification[Any]:
    dialect = contents.get("$schema") if isinstance(contents, dict) else None
    if not isinstance(dialect, str):
        return default
    try:
        return referencing.jsonschema.specification_with(dialect, default=default)
    except referencing.jsonschema.UnknownDialect:
        return default


def _positions(uri: str, document: Any) -> dict[int, Location]:
    """The location of every JSON object in `document`, by object identity."""
    positions: dict[int, Location] = {}
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, dict):
            positions.setdefault(id(node), Location(uri, pointer))
            stack.extend((value, child(pointer, key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, child(pointer, index)) for index, value in enumerate(node))
    return positions


class SchemaRegistry:
    """Documents that `$ref`s may name, by URI (copied and indexed once; reuse it across
    `load_schema` calls). The official meta-schemas of every supported draft are always included
    (from the installed `jsonschema-specifications`, not the network). Documents of draft-04,
    draft-06 and 2019-09 are translated as `formwork.schemas.dialects` says."""

    def __init__(self, documents: Mapping[str, Any] | None = None, *,
                 default_draft: Draft | None = None, max_depth: int = MAX_DEPTH) -> None:
        declared = default_draft or DRAFT_2020_12_SPEC
        default = declared.target.specification
        self.documents: dict[str, Any] = dict(_metaschemas())
        self.positions: dict[int, Location] = dict(_metaschema_positions())
        pairs = []
        for uri, document in (documents or {}).items():
            if not isinstance(uri, str):
                raise TypeError(f"registry keys are URIs (str), not {type(uri).__name__}")
            uri = uri.rstrip("#")
            document = _translated(checked_copy(document, max_depth), declared, uri)
            self.documents[uri] = document
            self.positions.update(_positions(uri, document))
            pairs.append((uri, Resource(contents=document,
                                        specification=_specification(document, default))))
        if any(uri in _metaschemas() for uri, _ in pairs):  # a meta-schema replaced: all anew
            pairs = [(uri, Resource(contents=doc, specification=_specification(doc, default)))
                     for uri, doc in self.documents.items()]
            self.registry: Registry[Any] = Registry(retrieve=_no_network).with_resources(pairs).crawl()
        else:
            self.registry = _metaschema_registry(default).with_resources(pairs).crawl()


def _translated(document: Any, default: Draft, uri: str) -> Any:
    """A registry document as its draft's target says it (see `formwork.schemas.dialects`); a
    document whose `$schema` is unusable is kept as it is: the analysis reports it if reached."""
    try:
        draft, _ = declared_draft(document, default, pointer=uri + "#")
        return translate(document, draft, entry=False)[0]
    except UnknownDraftError:
        return document


@lru_cache(maxsize=1)
def _metaschemas() -> dict[str, Any]:
    """The meta-schema documents of every supported draft (vocabularies included), those of
    draft-04, draft-06 and 2019-09 translated like any other schema of theirs."""
    return {uri: _translated(SPECIFICATIONS[uri].contents, DRAFT_2020_12_SPEC, uri)
            for uri in SPECIFICATIONS if uri.startswith(_METASCHEMA_PREFIXES)}


@lru_cache(maxsize=None)
def _metaschema_registry(default: Specification[Any]) -> Registry[Any]:
    """The meta-schemas as a crawled `referencing` registry (`default`: the specification of a
    meta-schema without `$schema`), made once: a registry's own documents are added to it."""
    pairs = [(uri, Resource(contents=doc, specification=_specification(doc, default)))
             for uri, doc in _metaschemas().items()]
    return Registry(retrieve=_no_network).with_resources(pairs).crawl()


@lru_cache(maxsize=1)
def _metaschema_positions() -> dict[int, Location]:
    positions: dict[int, Location] = {}
    for uri, document in _metaschemas().items():
        positions.update(_positions(uri, document))
    return positions


@lru_cache(maxsize=1)
def empty_registry() -> SchemaRegistry:
    """The registry with only the meta-schemas (shared by loads that pass no registry)."""
    return SchemaRegistry()


def _plain_pointer_lookup(resolver: Resolver[Any], ref: str) -> tuple[Any, Resolver[Any], Any] | None:
    """`resolver.lookup(ref)` (its contents and resolver, and the document walked) for a
    JSON-pointer fragment (`#/definitions/a`) whose every step lands on an object with neither
    `$id` nor `id`, without `referencing`'s walk; None for any other `ref` (looked up as usual).
    Such steps enter no subresource with an identifier in any draft, so the resolver is the one
    `lookup` evolves for the document (`resolvers.evolved`) and the contents are those its walk
    reaches (the same decoding: percent, then `~1` and `~0`); ~1.5 us against ~10."""
    if not ref.startswith("#/") or not resolvers.DIRECT:  # (it reads the registry's private map)
        return None
    uri = resolver._base_uri
    registry = resolver._registry
    resource = registry._resources.get(uri)  # `get_or_retrieve`'s first step, without its wrapper
    if resource is None:
        try:
            retrieved = registry.get_or_retrieve(uri)
        except Exception:  # noqa: BLE001 - `lookup` raises it as an unresolvable ref
            return None
        registry, resource = retrieved.registry, retrieved.value
    document = contents = resource.contents
    for segment in (unquote(ref[2:]) if "%" in ref else ref[2:]).split("/"):
        if type(contents) is not dict:
            return None
        if "~" in segment:
            segment = segment.replace("~1", "/").replace("~0", "~")
        contents = contents.get(segment, _ABSENT)
        if type(contents) is not dict or "$id" in contents or "id" in contents:
            return None
    return contents, evolved(resolver, registry), document


def _scope(resolver: Resolver[Any]) -> tuple[str, int, tuple[str, ...]]:
    """What a `referencing` resolver's lookups depend on, as a key: its base URI, its registry
    (by id: a key's entry holds the resolver, hence the registry) and its dynamic scope (the
    base URIs it came through; `Resolver.dynamic_scope` pairs them with this same registry)."""
    return resolver._base_uri, id(resolver._registry), tuple(resolver._previous)


class RefIndex:
    """The root document plus registry documents, a `referencing` resolver over them, and the
    `Location` of every JSON object they contain (for naming `$ref` targets)."""

    def __init__(self, root: Any, draft: Draft, registry: SchemaRegistry | None = None) -> None:
        self._registry = registry = registry or empty_registry()
        self._root, self._draft = root, draft
        # without `$id` the root has no URI in either draft: its resource waits for the resolver
        self.root_uri = (self._root_resource.id() or "") if isinstance(root, dict) and "$id" in root else ""
        self.documents: Mapping[str, Any] = {**registry.documents, self.root_uri: root}
        self._shared_positions = registry.positions
        self._root_positions: dict[int, Location] | None = None  # built on first use
        self._crawl: tuple[Registry[Any], Registry[Any]] | None = None  # see `_keep_crawl`
        # what `resolve` and `enter` gave, by their arguments (`_scope`; the resolver asked is
        # kept beside its answer, and the schema entered, so the ids in the keys name no others)
        self._resolved: dict[tuple, tuple[Resolver[Any], tuple[Any, Resolver[Any], Location]]] = {}
        self._entered: dict[tuple, tuple[Any, Resolver[Any], Resolver[Any]]] = {}

    @cached_property
    def _root_resource(self) -> Resource[Any]:
        """The root document as a `referencing` resource (its draft from `$schema` or the default)."""
        return Resource(contents=self._root, specification=_specification(self._root, self._draft.specification))

    @cached_property
    def resolver(self) -> Resolver[Any]:
        """The root's resolver, made on first use: a schema without `$ref` or `$id` never needs
        it, and callers pass None for it meanwhile (`resolve` and `enter` take None as the root's)."""
        return resolver_with_root(self._registry.registry, self._root_resource)

    def _crawled_instead(self, resolver: Resolver[Any]) -> Resolver[Any]:
        """`resolver` over the registry its lookups crawled to, once one did (`_keep_crawl`)."""
        if self._crawl is not None and resolver._registry is self._crawl[0]:
            return evolve(resolver, registry=self._crawl[1])
        return resolver

    def _keep_crawl(self, before: Resolver[Any], after: Resolver[Any]) -> None:
        """Keep the registry a lookup crawled to (finding the root's embedded resources): a lookup
        that misses the registry crawls the whole root, and the resolvers made inside the root
        (`enter`) share its uncrawled registry, so each such lookup would crawl it again (~390
        resources a lookup for cucumber's messages schema).  Lookups give the same either way."""
        if self._crawl is None and after._registry is not before._registry:
            self._crawl = (before._registry, after._registry)

    def display(self, location: Location) -> str:
        """A JSON pointer for the root document, `uri#pointer` for other documents."""
        if location.uri == self.root_uri:
            return location.pointer
        return f"{location.uri}#{location.pointer}"

    def location_of(self, schema: Any) -> Location | None:
        """The location of a JSON object of one of the documents (None for booleans/others)."""
        if not isinstance(schema, dict):
            return None
        if self._root_positions is None:
            self._root_positions = _positions(self.root_uri, self._root)
        return self._root_positions.get(id(schema)) or self._shared_positions.get(id(schema))

    def enter(self, schema: Any, resolver: Resolver[Any] | None, spec: Specification[Any]) -> Resolver[Any] | None:
        """The resolver to use inside `schema` (which may set a new base URI with `$id`); None
        stands for the root's, as in `resolve`.

        Idempotent: entering a schema whose scope `resolver` already has (the root, or a target
        returned by `resolve`) returns `resolver`, so a relative `$id` is never applied twice.
        """
        if not isinstance(schema, dict) or "$id" not in schema:  # both drafts spell it `$id`
            return resolver
        resource = Resource(contents=schema, specification=_specification(schema, spec))
        if resource.id() is None:
            return resolver
        resolver = resolver or self.resolver
        key = (id(schema), *_scope(resolver))
        kept = self._entered.get(key)
        if kept is not None and kept[0] is schema and kept[1]._registry is resolver._registry:
            return kept[2]
        try:
            scoped = resolver.lookup("#").contents is schema
        except referencing.exceptions.Unresolvable:
            scoped = False
        inner = resolver if scoped else resolver.in_subresource(resource)
        self._entered[key] = (schema, resolver, inner)
        return inner

    def resolve(self, ref: str, resolver: Resolver[Any] | None = None, *,
                site: str | None = None) -> tuple[Any, Resolver[Any], Location]:
        """Resolve `ref` against `resolver` (the root's by default); `site` names the `$ref` in
        error messages. The target must be a schema (an object or a boolean).

        Kept per `ref` and resolver state (`_scope`: base URI, registry, dynamic scope; resolvers
        are immutable): the analysis and the lowering resolve each `$ref` site, through resolvers
        that are equal copies (a lookup returns a fresh one), ~40 us a lookup, 198 for cucumber's
        messages.  An equal resolver looks up the same, so the kept answer, its resolver's dynamic
        scope included, is what a fresh lookup would give."""
        resolver = resolver or self.resolver
        if not isinstance(ref, str):
            raise UnresolvableRefError(f"$ref must be a string, not {type(ref).__name__}",
                                       pointer=site)
        key = (ref, *_scope(resolver))
        kept = self._resolved.get(key)
        if kept is not None and kept[0]._registry is resolver._registry:
            return kept[1]
        found = self._resolve(ref, resolver, site)
        self._resolved[key] = (resolver, found)
        return found

    def _resolve(self, ref: str, resolver: Resolver[Any],
                 site: str | None) -> tuple[Any, Resolver[Any], Location]:
        """`resolve`, looked up."""
        try:
            resolver = self._crawled_instead(resolver)
            found = _plain_pointer_lookup(resolver, ref)
            if found is None:
                resolved = resolver.lookup(ref)
                found = resolved.contents, resolved.resolver, None
            self._keep_crawl(resolver, found[1])
        except referencing.exceptions.PointerToNowhere:
            raise UnresolvableRefError(f"$ref {ref!r}: the JSON pointer leads nowhere",
                                       pointer=site) from None
        except (referencing.exceptions.NoSuchAnchor, referencing.exceptions.InvalidAnchor):
            raise UnresolvableRefError(f"$ref {ref!r}: no such anchor", pointer=site) from None
        except referencing.exceptions.Unresolvable:
            raise UnresolvableRefError(
                f"$ref {ref!r}: the document is not in the registry (formwork never fetches "
                "schemas from the network; pass it in `registry`)", pointer=site) from None
        except (KeyError, IndexError, TypeError, ValueError):
            raise UnresolvableRefError(f"$ref {ref!r}: the JSON pointer leads nowhere",
                                       pointer=site) from None
        contents, inner, document = found
        if not isinstance(contents, (dict, bool)):
            raise UnresolvableRefError(f"$ref {ref!r} points to {contents!r:.40}, which is not a "
                                       "schema (an object or a boolean)", pointer=site)
        if document is self._root and "~" not in ref and "%" not in ref:
            # walked from the root through objects by tokens needing no escape: the fragment
            # is the canonical pointer `_root_pointer_location` would spell
            return contents, inner, Location(self.root_uri, ref[1:])
        location = self._root_pointer_location(ref, contents) or self.location_of(contents) \
            or self._boolean_location(ref, resolver)
        return contents, inner, location

    def _root_pointer_location(self, ref: str, contents: Any) -> Location | None:
        """The location of `contents` when `ref` is a JSON-pointer fragment that leads to it from
        the root document (the usual `#/$defs/...`), read off the pointer instead of indexing every
        object of the root (`location_of`); None otherwise (an anchor, another document, a pointer
        relative to an embedded `$id`, a boolean).  The root is a fresh copy, so an object sits
        at one pointer only: the canonical spelling of the pointer walked is its location."""
        if not ref.startswith("#/") or not isinstance(contents, dict):
            return None
        node: Any = self._root
        pointer = ""
        try:
            tokens = split_pointer(from_fragment(ref[1:]))
        except InvalidPointerError:
            return None
        for token in tokens:
            if type(node) is dict:
                node = node.get(token, _ABSENT)
            elif type(node) is list and token.isdigit() and str(int(token)) == token \
                    and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
            pointer = child(pointer, token)
        return Location(self.root_uri, pointer) if node is contents else None

    def _boolean_location(self, ref: str, resolver: Resolver[Any]) -> Location:
        """Where a boolean target sits: its enclosing object's location plus the fragment."""
        uri_part, fragment = urldefrag(ref)
        base = resolver.lookup(uri_part + "#" if uri_part else "#")
        base_location = self.location_of(base.contents)
        if base_location is None:  # the whole document is a boolean schema
            return Location(uri_part, "")
        return Location(base_location.uri, base_location.pointer + from_fragment(fragment))

    def lookup(self, ref: str, resolver: Resolver[Any] | None = None, *,
               site: str | None = None, dynamic: bool = False) -> ResolvedRef:
        """Like `resolve` (`resolve_dynamic` with `dynamic`), with the location displayed as in
        problem reports."""
        resolve = self.resolve_dynamic if dynamic else self.resolve
        schema, inner, location = resolve(ref, resolver, site=site)
        return ResolvedRef(schema, inner, self.display(location))

    def resolve_dynamic(self, ref: str, resolver: Resolver[Any] | None = None, *,
                        site: str | None = None) -> tuple[Any, Resolver[Any], Location]:
        """A 2020-12 `$dynamicRef`, where its target does not depend on the dynamic scope.

        It resolves like `$ref` unless it lands on a `$dynamicAnchor` of the fragment's name;
        then the outermost resource of the dynamic scope that defines that anchor wins. That is
        the root's when the root resource defines it (validation always starts there), and the
        one found when no other resource defines it; otherwise `DynamicRefError`.
        """
        target = self.resolve(ref, resolver, site=site)
        name = urldefrag(ref).fragment if isinstance(ref, str) else ""
        if not name or name.startswith("/") or not isinstance(target[0], dict) \
                or target[0].get("$dynamicAnchor") != name:
            return target
        try:
            at_root = self.resolver.lookup("#" + name).contents
        except referencing.exceptions.Unresolvable:
            at_root = None
        if isinstance(at_root, dict) and at_root.get("$dynamicAnchor") == name:
            return self.resolve("#" + name, None, site=site)
        if self._dynamic_anchor_count(name) <= 1:
            return target
        raise DynamicRefError(f"$dynamicRef {ref!r}: several resources define $dynamicAnchor "
                              f"{name!r} and the root does not, so the target depends on the path "
                              "validation takes to reach it", pointer=site)

    def _dynamic_anchor_count(self, name: str) -> int:
        """How many subschemas of the root and registry documents are `$dynamicAnchor: name`."""
        count, stack = 0, list(self.documents.values())
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                count += node.get("$dynamicAnchor") == name
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        return count
