"""One traversal of everything a schema reaches from its root through `$ref`: resolves every
reference (failing fast on dangling ones), records the reference graph, and classifies every
keyword met (unsupported / unknown / ignored) with its JSON pointer.

Definitions (`$defs`, `definitions`) are visited only when a `$ref` reaches them, so a library
of unused definitions does not make a schema unenforceable; unsupported keywords in definitions
of the root document that nothing reaches are listed apart (`Analysis.unreached`, as infos).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, Optional

from formwork.schemas import _analysis_walk as _walk
from formwork.schemas._analysis_walk import walk_target
from formwork.schemas.dialects import foreign_keyword
from formwork.schemas.drafts import Draft, draft_of
from formwork.schemas.errors import (DynamicRefError, SchemaTooLargeError, UnknownDraftError,
                                     UnresolvableRefError)
from formwork.schemas.keywords import (ANNOTATION_KEYWORDS, DEFINITION_CONTAINERS, DRAFT_07,
                                       INSTANCE_DESCENDING, PLAIN_KEYWORDS, SUBSCHEMA_KEYWORDS,
                                       KeywordKind, Shape, classify)
from formwork.schemas.metaschema import check_meta_schema
from formwork.schemas.pointer import child
from formwork.schemas.problems import Problem, Severity
from formwork.schemas.refs import Location, RefIndex
from formwork.schemas.walk import ref_overrides_siblings, subschema_tuples

if TYPE_CHECKING:
    from referencing._core import Resolver  # the public type, defined privately

#: Most subschema visits one analysis may make (guards against reference blow-ups).
MAX_VISITS = 200_000

_SEVERITY = {
    KeywordKind.UNSUPPORTED: Severity.ERROR,
    KeywordKind.UNKNOWN: Severity.WARNING,
    KeywordKind.IGNORED: Severity.WARNING,
    KeywordKind.SUPPORTED: Severity.WARNING,  # with a reason: enforced as a subset (a format)
}


@dataclass(frozen=True)
class RefSite:
    """A `$ref` keyword: the location of its schema object, the ref text and its target."""

    location: Location
    ref: str
    target: Location


@dataclass
class Analysis:
    """What the traversal found. `target_sites[t]` lists the `$ref` sites evaluated when
    target `t` is evaluated (without following other refs), each with whether the path from
    `t` to it descends into a member of the instance."""

    root: Location
    sites: dict[Location, RefSite] = field(default_factory=dict)
    targets: dict[Location, Any] = field(default_factory=dict)
    target_drafts: dict[Location, Draft] = field(default_factory=dict)
    target_sites: dict[Location, list[tuple[Location, bool]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    visited: set[Location] = field(default_factory=set)
    #: lists the unreached definitions' problems (None: there are none); run on first use of
    #: `unreached`: compiling never reads them, only a report to the user does
    report_unreached: Optional[Callable[[], list[Problem]]] = field(default=None, repr=False)
    _unreached: Optional[list[Problem]] = field(default=None, repr=False)

    @property
    def unreached(self) -> list[Problem]:
        """Infos for unsupported keywords in root-document definitions no `$ref` reaches."""
        if self._unreached is None:
            self._unreached = self.report_unreached() if self.report_unreached is not None else []
            self.report_unreached = None
        return self._unreached


def _nested_draft(node: dict[str, Any], outer: Draft, pointer: str) -> Draft:
    """The draft a subschema declares; one that must be translated first (draft-04, draft-06,
    2019-09) inside a draft-07 or 2020-12 schema is refused."""
    draft = draft_of(node, outer, pointer=pointer)
    if draft.translated_to is not None:
        raise UnknownDraftError(f"a subschema declaring {draft.name} inside a {outer.name} "
                                "schema is not supported (declare it in a document of its own "
                                "and $ref it, or use one draft)", pointer=child(pointer, "$schema"))
    return draft


def _too_many_visits() -> NoReturn:
    """The visit limit's error (raised for `_analysis_walk.walk_target`)."""
    raise SchemaTooLargeError(f"more than {MAX_VISITS} subschema visits through $ref; the schema is "
                              "too large to analyse")


_SHAPE_CODES = {Shape.SCHEMA: _walk.ONE, Shape.SCHEMA_OR_LIST: _walk.ONE_OR_LIST,
                Shape.SCHEMA_LIST: _walk.LIST, Shape.SCHEMA_MAP: _walk.MAP,
                Shape.MAP_OF_SCHEMA_OR_STRINGS: _walk.MAP}


def _layout_codes(draft: str) -> dict[str, int]:
    """The draft's subschema keywords, definition containers left out (a walk reaches
    definitions through `$ref` only), each with its `_analysis_walk` layout code: its shape,
    whether it descends into the instance, whether it needs classifying."""
    return {keyword: _SHAPE_CODES[shape] | (_walk.DESCENDS if keyword in INSTANCE_DESCENDING else 0)
            | (0 if keyword in PLAIN_KEYWORDS[draft] else _walk.UNPLAIN)
            for keyword, shape in SUBSCHEMA_KEYWORDS[draft].items() if keyword not in DEFINITION_CONTAINERS}


def _plain_beside_ref(draft: str) -> frozenset[str]:
    """The keywords `_Analyser._classify` reports nothing for beside a `$ref` that overrides its
    siblings (draft-07): `$ref`, definition containers and annotations, where the draft finds
    them plain (any other is "ignored", or classified)."""
    return frozenset(keyword for keyword in PLAIN_KEYWORDS[draft] if keyword == "$ref"
                     or keyword in DEFINITION_CONTAINERS or keyword in ANNOTATION_KEYWORDS)


_walk.configure(Location, {draft: (PLAIN_KEYWORDS[draft], _layout_codes(draft), _plain_beside_ref(draft),
                                   draft == DRAFT_07)
                           for draft in SUBSCHEMA_KEYWORDS}, _nested_draft, _too_many_visits)


class _Analyser:
    def __init__(self, index: RefIndex, root: Any, draft: Draft) -> None:
        self.index = index
        self.root_draft = draft
        self.result = Analysis(root=Location(index.root_uri, ""))
        self.pending: list[tuple[Any, Location, Resolver[Any], Draft]] = [
            (root, self.result.root, None, draft)]  # None: the root's resolver (made on first use)
        self.reported: set[Location] = set()
        self.checked_documents = {index.root_uri}
        self.visits = 0
        #: whether some subschema visited holds `$defs`/`definitions`: without one, no
        #: definition of the root document can be unreached (the walk skips only those)
        self.saw_definitions = False

    def run(self) -> Analysis:
        while self.pending:
            schema, location, resolver, draft = self.pending.pop()
            if location in self.result.targets:
                continue
            self.result.targets[location] = schema
            self.result.target_drafts[location] = draft
            self.result.target_sites[location] = self._walk_target(schema, location, resolver, draft)
        return self.result

    def _walk_target(self, schema: Any, location: Location, resolver: Resolver[Any],
                     draft: Draft) -> list[tuple[Location, bool]]:
        """Walk the subschemas of one target (`_analysis_walk.c`): mark each visited, classify
        the keywords of those not yet reported, follow their `$ref`s and queue their subschemas;
        returns the `$ref` sites met, each with whether its path descends into the instance."""
        return walk_target(self, self.result.visited, self.reported, self.index, schema, location,
                           resolver, draft, MAX_VISITS)

    @staticmethod
    def _unsupported(keyword: str, node: dict[str, Any], draft: Draft) -> bool:
        """Whether `keyword` of `node` is unsupported (so are its subschemas)."""
        return classify(keyword, node[keyword], draft.name, node).kind is KeywordKind.UNSUPPORTED

    def _follow(self, ref: Any, location: Location, resolver: Resolver[Any], draft: Draft,
                keyword: str = "$ref") -> bool:
        """Record the reference at `location` and queue its target; False (and an error
        problem) for a `$dynamicRef` whose target depends on the dynamic scope.  The site's
        pointer is spelled only for a problem or an error (resolved without it, the error raised
        again with it: the same error `resolve(..., site=site)` raises)."""
        try:
            resolve = self.index.resolve if keyword == "$ref" else self.index.resolve_dynamic
            target, target_resolver, target_location = resolve(ref, resolver)
        except DynamicRefError as error:
            site = child(self.index.display(location), keyword)
            self.result.problems.append(Problem(site, keyword, error.reason, Severity.ERROR))
            return False
        except UnresolvableRefError as error:
            raise UnresolvableRefError(error.reason, pointer=child(self.index.display(location), keyword)) \
                from None
        self.result.sites[location] = RefSite(location, ref, target_location)
        if target_location in self.result.targets:
            return True
        target_draft = draft
        if target_location.uri != location.uri:
            document = self.index.documents.get(target_location.uri)
            target_draft = draft_of(document, self.root_draft, pointer=target_location.uri + "#")
            foreign = None if target_draft is self.root_draft or document is None else \
                foreign_keyword(document, target_draft)
            if foreign is not None:
                site = child(self.index.display(location), keyword)
                self.result.problems.append(Problem(
                    site, keyword, f"the target is a {target_draft.name} document using {foreign!r} "
                    f"inside a {self.root_draft.name} schema, which reads it differently; mixing the "
                    "two is not supported", Severity.ERROR))
                return False
            if target_location.uri not in self.checked_documents and document is not None:
                self.checked_documents.add(target_location.uri)
                check_meta_schema(document, target_draft, base=target_location.uri + "#")
        self.pending.append((target, target_location, target_resolver, target_draft))
        return True

    def _classify(self, schema: dict[str, Any], location: Location, draft: Draft) -> None:
        only_ref = ref_overrides_siblings(schema, draft.name)
        plain = PLAIN_KEYWORDS[draft.name]
        if not only_ref and plain.issuperset(schema):
            return  # nothing to report (the usual case)
        for keyword, value in schema.items():
            if only_ref and keyword != "$ref" and keyword not in DEFINITION_CONTAINERS \
                    and keyword not in ANNOTATION_KEYWORDS:
                self.result.problems.append(Problem(
                    child(self.index.display(location), keyword), keyword,
                    "ignored: draft-07 ignores every keyword next to $ref", Severity.WARNING))
                continue
            if keyword in plain:
                continue  # supported or an annotation whatever its value: nothing to report
            verdict = classify(keyword, value, draft.name, schema)
            severity = _SEVERITY.get(verdict.kind)
            if severity is not None and verdict.reason:
                self.result.problems.append(Problem(child(self.index.display(location), keyword),
                                                    keyword, verdict.reason, severity))


def unreached_definitions(uri: str, root: Any, root_draft: Draft, visited: set[Location]
                          ) -> list[Problem]:
    """Info problems for unsupported keywords in definitions of the root document (`root` at
    `uri`) that the walk never `visited`."""
    found: list[Problem] = []
    stack: list[tuple[Any, str, Draft, bool]] = [(root, "", root_draft, False)]
    while stack:
        schema, pointer, draft, in_definition = stack.pop()
        if not isinstance(schema, dict):
            continue
        if "$schema" in schema:
            try:
                draft = _nested_draft(schema, draft, pointer)
            except UnknownDraftError:
                continue
        unreached = in_definition and Location(uri, pointer) not in visited
        children = []
        for keyword, tokens, sub, _ in subschema_tuples(schema, draft.name):
            if unreached and classify(keyword, schema[keyword], draft.name,
                                      schema).kind is KeywordKind.UNSUPPORTED:
                continue
            children.append((sub, child(pointer, *tokens), draft,
                             in_definition or keyword in DEFINITION_CONTAINERS))
        stack.extend(reversed(children))
        if not unreached:
            continue
        for keyword, value in schema.items():
            verdict = classify(keyword, value, draft.name, schema)
            if verdict.kind is KeywordKind.UNSUPPORTED:
                found.append(Problem(
                    child(pointer, keyword), keyword,
                    f"in a definition no $ref reaches (not compiled): {verdict.reason}",
                    Severity.INFO))
    return found


def analyse(index: RefIndex, root: Any, draft: Draft) -> Analysis:
    """Traverse `root` and everything its references reach; see the module docstring.  The
    unreached definitions are walked only when `Analysis.unreached` is first read."""
    analyser = _Analyser(index, root, draft)
    analyser.run()
    if analyser.saw_definitions:
        analyser.result.report_unreached = functools.partial(
            unreached_definitions, index.root_uri, root, draft, analyser.result.visited)
    return analyser.result
