"""formwork.schemas: the JSON Schema front end.

Load a schema (dict, JSON text or file), check it against its draft's meta-schema (2020-12 or
draft-07), resolve `$ref` through a registry (never the network), detect reference cycles,
normalise it for the grammar compiler and report keywords that cannot be enforced.
"""
from formwork.schemas.document import SchemaDocument, load_schema
from formwork.schemas.errors import (InvalidJSONError, MetaSchemaError, SchemaError,
                                     SchemaFileError, SchemaTooDeepError, SchemaTooLargeError,
                                     UnknownDraftError, UnresolvableRefError,
                                     UnsupportedKeywordError)
from formwork.schemas.keywords import (ANNOTATION_KEYWORDS, SUPPORTED_FORMATS, SUPPORTED_KEYWORDS,
                                       UNSUPPORTED_KEYWORDS, KeywordKind, classify)
from formwork.schemas.normalize import NormalizedSchema, json_equal
from formwork.schemas.problems import Problem, Severity
from formwork.schemas.refs import ResolvedRef, SchemaRegistry

__all__ = [
    "ANNOTATION_KEYWORDS", "SUPPORTED_FORMATS", "SUPPORTED_KEYWORDS", "UNSUPPORTED_KEYWORDS",
    "InvalidJSONError", "KeywordKind", "MetaSchemaError", "NormalizedSchema", "Problem",
    "ResolvedRef", "SchemaDocument", "SchemaError", "SchemaFileError", "SchemaRegistry",
    "SchemaTooDeepError", "SchemaTooLargeError", "Severity", "UnknownDraftError",
    "UnresolvableRefError", "UnsupportedKeywordError", "classify", "json_equal", "load_schema",
]
