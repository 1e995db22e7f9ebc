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
from typing import TYPE_CHECKING, Any, Optional

from formwork.schemas.dialects import foreign_keyword
from formwork.schemas.drafts import Draft, draft_of
from formwork.schemas.errors import DynamicRefError, SchemaTooLargeError, UnknownDraftError
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
#: Each draft's subschema keywords, definition containers left out (a walk reaches definitions
#: through `$ref` only), with their shapes
_LAYOUTS = {draft: {k: v for k, v in shapes.items() if k not in DEFINITION_CONTAINERS}
            for draft, shapes in SUBSCHEMA_KEYWORDS.items()}
_ONE, _ONE_OR_LIST, _LIST = Shape.SCHEMA, Shape.SCHEMA_OR_LIST, Shape.SCHEMA_LIST
_location = tuple.__new__  # `Location(uri, pointer)` without the named tuple's Python-level `__new__`

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


#: A subschema waiting in the walk: (schema, location, resolver, draft, whether inside an
#: unsupported keyword, whether the path to it descends into the instance); a plain tuple, made
#: once per subschema visited.
_Frame = tuple[Any, Location, "Resolver[Any]", Draft, bool, bool]


def _nested_draft(node: dict[str, Any], outer: Draft, pointer: str) -> Draft:
    """The draft a subschema declares; one that must be translated first (draft-04, draft-06,
    2019-09) inside a draft-07 or 2020-12 schema is refused."""
    draft = draft_of(node, outer, pointer=pointer)
    if draft.translated_to is not None:
        raise UnknownDraftError(f"a subschema declaring {draft.name} inside a {outer.name} "
                                "schema is not supported (declare it in a document of its own "
                                "and $ref it, or use one draft)", pointer=child(pointer, "$schema"))
    return draft


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
        found: list[tuple[Location, bool]] = []
        stack: list[_Frame] = [(schema, location, resolver, draft, False, False)]
        visited, reported, index = self.result.visited, self.reported, self.index
        visits = self.visits
        try:
            while stack:
                node, here, node_resolver, node_draft, in_unsupported, descended = stack.pop()
                visits += 1
                if visits > MAX_VISITS:
                    raise SchemaTooLargeError(f"more than {MAX_VISITS} subschema visits through "
                                              "$ref; the schema is too large to analyse")
                if not isinstance(node, dict):
                    continue
                visited.add(here)
                if not self.saw_definitions and not DEFINITION_CONTAINERS.isdisjoint(node):
                    self.saw_definitions = True
                if "$schema" in node:
                    node_draft = _nested_draft(node, node_draft, index.display(here))
                name = node_draft.name
                if not in_unsupported and here not in reported:
                    reported.add(here)
                    if "$ref" in node and name == DRAFT_07 or not PLAIN_KEYWORDS[name].issuperset(node):
                        self._classify(node, here, node_draft)
                keyword = "$ref" if "$ref" in node else "$dynamicRef" if "$dynamicRef" in node else None
                if keyword is not None and self._follow(node[keyword], here, node_resolver, node_draft,
                                                        keyword):
                    found.append((here, descended))
                layout = _LAYOUTS[name]
                if layout.keys().isdisjoint(node) or name == DRAFT_07 and "$ref" in node:
                    continue  # a leaf (the usual node; draft-07 ignores what sits beside `$ref`)
                children: list[_Frame] = []
                unsupported: dict[str, bool] = {}  # keyword -> whether its subschemas are unsupported
                uri, pointer, spec = here.uri, here.pointer, node_draft.specification
                plain = PLAIN_KEYWORDS[name]
                for keyword, value in node.items():
                    shape = layout.get(keyword)
                    if shape is None:
                        continue
                    at = pointer + "/" + keyword  # no keyword needs escaping
                    if shape is _ONE or shape is _ONE_OR_LIST and not isinstance(value, list):
                        members: Any = ((at, value),)
                    elif shape is _LIST or shape is _ONE_OR_LIST:
                        members = [(f"{at}/{i}", sub) for i, sub in enumerate(value)] \
                            if isinstance(value, list) else ()
                    elif isinstance(value, dict):  # a map of subschemas (draft-07 `dependencies`: or strings)
                        members = [(child(at, k), sub) for k, sub in value.items()]
                    else:
                        continue
                    skipped = None
                    descends = descended or keyword in INSTANCE_DESCENDING
                    for sub_pointer, sub in members:
                        if not isinstance(sub, (dict, bool)):
                            continue  # no schema (a list of draft-07 `dependencies`, say)
                        if skipped is None:
                            skipped = in_unsupported or keyword not in plain and self._unsupported(
                                unsupported, keyword, node, node_draft)
                        # `index.enter` returns the resolver itself for a subschema without `$id`
                        sub_resolver = node_resolver if not isinstance(sub, dict) or "$id" not in sub else \
                            index.enter(sub, node_resolver, spec)
                        children.append((sub, _location(Location, (uri, sub_pointer)), sub_resolver,
                                         node_draft, skipped, descends))
                stack.extend(reversed(children))
        finally:
            self.visits = visits
        return found

    @staticmethod
    def _unsupported(memo: dict[str, bool], keyword: str, node: dict[str, Any], draft: Draft) -> bool:
        """Whether `keyword` of `node` is unsupported (so are its subschemas), kept in `memo`."""
        skipped = memo.get(keyword)
        if skipped is None:
            verdict = classify(keyword, node[keyword], draft.name, node)
            skipped = memo[keyword] = verdict.kind is KeywordKind.UNSUPPORTED
        return skipped

    def _follow(self, ref: Any, location: Location, resolver: Resolver[Any], draft: Draft,
                keyword: str = "$ref") -> bool:
        """Record the reference at `location` and queue its target; False (and an error
        problem) for a `$dynamicRef` whose target depends on the dynamic scope."""
        site = child(self.index.display(location), keyword)
        try:
            resolve = self.index.resolve if keyword == "$ref" else self.index.resolve_dynamic
            target, target_resolver, target_location = resolve(ref, resolver, site=site)
        except DynamicRefError as error:
            self.result.problems.append(Problem(site, keyword, error.reason, Severity.ERROR))
            return False
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
        if not only_ref and PLAIN_KEYWORDS[draft.name].issuperset(schema):
            return  # nothing to report (the usual case)
        for keyword, value in schema.items():
            if only_ref and keyword != "$ref" and keyword not in DEFINITION_CONTAINERS \
                    and keyword not in ANNOTATION_KEYWORDS:
                self.result.problems.append(Problem(
                    child(self.index.display(location), keyword), keyword,
                    "ignored: draft-07 ignores every keyword next to $ref", Severity.WARNING))
                continue
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
