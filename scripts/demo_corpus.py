"""Deterministic synthetic corpus for the embedded demo model.

Every sample is one training text: mostly chat conversations (ChatML) whose assistant turn is a JSON
document for a randomly generated JSON Schema (entity-like objects with typical field names, nested
objects, arrays, numbers, booleans, nulls, strings; compact, ``", "``-spaced or indented), plus raw JSON
documents and short English-like sentences. The same seed always yields the same samples.
"""

from __future__ import annotations

import json
import random
import string
from typing import Any, Iterator

IM_START, IM_END, END_OF_TEXT = "<|im_start|>", "<|im_end|>", "<|end_of_text|>"

FIRST = ("Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Liam Maria Noah Olivia Paul "
         "Quinn Rosa Sam Tina Umar Vera Walter Xena Yuki Zoe Ana Ben Chloe Diego Elena Felix Hana Ivan "
         "José Lena Marco Nina Omar Priya Ravi Sofia Tom Chen Aisha Lucas Mia Leo").split()
LAST = ("Smith Johnson Brown Garcia Miller Davis Lopez Wilson Anderson Taylor Moore Martin Lee Clark "
        "Lewis Walker Hall Young King Wright Scott Green Baker Adams Nelson Hill Campbell Mitchell "
        "Roberts Carter Müller Rossi Tanaka Kim Novak Silva Khan Singh Dubois Jensen").split()
CITIES = ("London Paris Berlin Madrid Rome Tokyo Boston Denver Austin Seattle Chicago Toronto Sydney "
          "Lisbon Vienna Prague Dublin Oslo Zurich Mumbai Seoul Lima Cairo Nairobi Portland Springfield").split()
COUNTRIES = ("USA UK France Germany Spain Italy Japan Canada Australia Portugal Austria Ireland Norway "
             "India Brazil Mexico Kenya Egypt Sweden Netherlands").split()
STREETS = "Main Oak Pine Maple Cedar Elm Park Lake Hill River Church Market High Mill Station".split()
STREET_KINDS = "Street Avenue Road Lane Drive Way Boulevard".split()
WORDS = ("red blue green fast slow new old small large bright dark quiet loud simple modern classic "
         "fresh warm cold happy smart open secure local global urgent daily weekly premium basic").split()
NOUNS = ("apple river book garden window computer table coffee music city train phone lamp market "
         "planet bridge forest camera ticket engine cloud server report project budget meeting recipe "
         "chair bottle guitar bicycle notebook jacket backpack keyboard monitor").split()
VERBS = "likes sees finds builds reads opens moves carries paints writes visits cleans checks".split()
TAGS = ("new sale popular featured eco organic vintage limited bestseller urgent work personal home "
        "travel food tech sports music art health finance python rust web mobile data").split()
STATUSES = "active inactive pending completed cancelled shipped delivered draft open closed".split()
DOMAINS = "example.com mail.com test.org company.io shop.net acme.co".split()
CURRENCIES = "USD EUR GBP JPY CAD".split()
CATEGORIES = "electronics books clothing toys garden kitchen sports beauty office music".split()
JOBS = "engineer teacher doctor designer writer nurse chef pilot analyst manager artist farmer".split()
COLORS = "red green blue yellow black white orange purple gray pink".split()

ENTITIES: dict[str, list[str]] = {
    "person": ["name", "age", "email", "phone", "address", "occupation", "hobbies", "married", "city"],
    "user": ["id", "username", "email", "age", "enabled", "roles", "created_at", "last_login", "verified"],
    "product": ["id", "name", "price", "currency", "in_stock", "tags", "category", "rating", "description"],
    "order": ["order_id", "customer", "items", "total", "status", "date", "shipping_address", "paid"],
    "book": ["title", "author", "year", "isbn", "pages", "genres", "available", "rating"],
    "movie": ["title", "director", "year", "duration", "genres", "rating", "cast"],
    "company": ["name", "founded", "employees", "industry", "address", "website", "public"],
    "employee": ["id", "name", "email", "department", "salary", "manager", "skills", "start_date", "active"],
    "event": ["name", "date", "location", "attendees", "capacity", "tags", "online", "description"],
    "task": ["id", "title", "done", "priority", "due_date", "assignee", "tags", "notes"],
    "weather report": ["city", "temperature", "humidity", "wind_speed", "conditions", "date", "alerts"],
    "transaction": ["id", "amount", "currency", "date", "status", "sender", "receiver", "fee"],
    "address": ["street", "city", "zip", "country"],
    "recipe": ["name", "servings", "ingredients", "steps", "vegetarian", "prep_time"],
    "server config": ["host", "port", "debug", "workers", "timeout", "allowed_hosts", "database"],
    "pet": ["name", "species", "age", "color", "vaccinated", "owner"],
    "car": ["make", "model", "year", "color", "mileage", "electric", "price"],
    "student": ["id", "name", "age", "grades", "courses", "graduated", "gpa"],
    "point": ["x", "y"],
    "location": ["latitude", "longitude", "name"],
}
PLURALS = {"person": "people", "company": "companies", "address": "addresses", "weather report":
           "weather reports", "server config": "server configs"}
GENERIC_KEYS = ("value count label code kind level score note flag mode size total enabled title "
                "source target key data result message type version active limit offset unit group "
                "color weight height width index ratio comment owner parent rank").split()

_S, _I, _N, _B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}


def _arr(items: dict, **kw: int) -> dict:
    return {"type": "array", "items": items, **kw}


def _obj(*keys: str) -> dict:
    return {"type": "object", "properties": {k: field_schema(k) for k in keys}, "required": list(keys)}


_FIELD_SCHEMAS: dict[str, Any] = {
    "age": {"type": "integer", "minimum": 0, "maximum": 120}, "email": {"type": "string", "format": "email"},
    "price": {"type": "number", "minimum": 0}, "total": _N, "amount": _N, "fee": _N, "salary": _I,
    "rating": {"type": "number", "minimum": 0, "maximum": 5}, "gpa": _N, "temperature": _N,
    "humidity": _I, "wind_speed": _N, "latitude": _N, "longitude": _N, "x": _N, "y": _N,
    "year": _I, "founded": _I, "pages": _I, "employees": _I, "port": _I, "workers": _I, "timeout": _N,
    "capacity": _I, "attendees": _I, "servings": _I, "prep_time": _I, "duration": _I, "mileage": _I,
    "priority": {"type": "integer", "minimum": 1, "maximum": 5}, "id": _I, "order_id": _S,
    "date": {"type": "string", "format": "date"}, "due_date": {"type": "string", "format": "date"},
    "start_date": {"type": "string", "format": "date"},
    "created_at": {"type": "string", "format": "date-time"},
    "last_login": {"type": ["string", "null"], "format": "date-time"},
    "website": {"type": "string", "format": "uri"}, "isbn": _S, "zip": _S, "phone": _S,
    "status": {"type": "string", "enum": ["active", "pending", "completed", "cancelled"]},
    "currency": {"type": "string", "enum": CURRENCIES}, "category": {"type": "string", "enum": CATEGORIES},
    "tags": _arr(_S, maxItems=4), "hobbies": _arr(_S), "roles": _arr(_S), "genres": _arr(_S),
    "skills": _arr(_S), "courses": _arr(_S), "allowed_hosts": _arr(_S), "alerts": _arr(_S),
    "ingredients": _arr(_S), "steps": _arr(_S), "cast": _arr(_S), "grades": _arr(_I),
    "notes": {"type": ["string", "null"]}, "manager": {"type": ["string", "null"]},
    "married": _B, "enabled": _B, "verified": _B, "in_stock": _B, "paid": _B, "available": _B,
    "public": _B, "active": _B, "online": _B, "done": _B, "debug": _B, "vegetarian": _B,
    "vaccinated": _B, "electric": _B, "graduated": _B, "quantity": {"type": "integer", "minimum": 1},
}
_RANGES = {"temperature": (-20, 40), "humidity": (0, 100), "wind_speed": (0, 30), "gpa": (0, 4),
           "grades": (50, 100), "latitude": (-90, 90), "longitude": (-180, 180), "servings": (1, 8),
           "prep_time": (5, 120), "pages": (50, 900), "employees": (1, 5000), "port": (1024, 9000),
           "workers": (1, 16), "timeout": (1, 60), "capacity": (10, 500), "attendees": (0, 300),
           "duration": (80, 180), "mileage": (0, 200000), "salary": (30000, 150000), "price": (1, 500),
           "total": (5, 1000), "amount": (1, 5000), "fee": (0, 20), "id": (1, 10000), "x": (-100, 100),
           "y": (-100, 100), "quantity": (1, 10), "age": (1, 90), "year": (1950, 2026),
           "founded": (1900, 2024), "rating": (1, 5), "priority": (1, 5)}
KEY_POOL = list(dict.fromkeys(GENERIC_KEYS + list(_FIELD_SCHEMAS)))
PERSON_LIKE = {"person", "user", "employee", "student", "order", "transaction", "task"}
_NESTED = {"address": ("street", "city", "zip", "country"), "shipping_address": ("street", "city", "zip"),
           "customer": ("name", "email"), "owner": ("name", "phone"), "author": ("name", "country"),
           "location": ("city", "country"), "database": ("host", "port", "name")}


def field_schema(key: str) -> dict:
    """The JSON Schema a typical field called ``key`` has."""
    if key in _NESTED:
        return _obj(*_NESTED[key])
    if key == "items":
        return _arr(_obj("name", "quantity", "price"), minItems=1, maxItems=3)
    return dict(_FIELD_SCHEMAS.get(key, _S))


class SampleGenerator:
    """Draws schemas, matching JSON instances and complete training texts from one seeded RNG."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.topic = "person"  # the entity being generated; it decides what a "name" looks like

    # ----- values -------------------------------------------------------------------------------
    def _name(self) -> str:
        return f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"

    def _date(self) -> str:
        r = self.rng
        return f"{r.randint(1990, 2026)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"

    def _phrase(self, lo: int = 1, hi: int = 3) -> str:
        r = self.rng
        words = [r.choice(WORDS + NOUNS) for _ in range(r.randint(lo, hi))]
        return " ".join(words)

    def string_value(self, key: str | None, fmt: str | None = None) -> str:
        r, k = self.rng, (key or "")
        if fmt is None:
            fmt = ("email" if k == "email" else "date" if k.endswith("date") else
                   "date-time" if k.endswith("_at") or k == "last_login" else
                   "uri" if k in ("website", "url") else None)
        if fmt == "email":
            return f"{r.choice(FIRST).lower()}.{r.choice(LAST).lower()}@{r.choice(DOMAINS)}"
        if fmt == "date":
            return self._date()
        if fmt == "date-time":
            return f"{self._date()}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00Z"
        if fmt == "uri":
            return f"https://{r.choice(['www.', ''])}{r.choice(NOUNS)}.{r.choice(['com', 'org', 'io'])}"
        if fmt == "uuid":
            return "-".join("".join(r.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12))
        table = {"city": CITIES, "country": COUNTRIES, "occupation": JOBS, "department": CATEGORIES,
                 "color": COLORS, "species": ["dog", "cat", "rabbit", "parrot"], "industry": CATEGORIES,
                 "currency": CURRENCIES, "status": STATUSES, "conditions": ["sunny", "cloudy", "rain"]}
        if k in table:
            return r.choice(table[k])
        if k == "name" and self.topic not in PERSON_LIKE:
            if self.topic == "pet":
                return r.choice(FIRST)
            return f"{r.choice(WORDS).capitalize()} {r.choice(NOUNS).capitalize()}"
        if k == "title":
            return self._phrase(2, 4).title()
        if k in ("name", "author", "director", "assignee", "sender", "receiver", "manager", "cast"):
            return self._name()
        if k == "username":
            return f"{r.choice(FIRST).lower()}{r.randint(1, 999)}"
        if k == "phone":
            return f"+1-555-{r.randint(100, 999)}-{r.randint(1000, 9999)}"
        if k == "street":
            return f"{r.randint(1, 999)} {r.choice(STREETS)} {r.choice(STREET_KINDS)}"
        if k in ("zip", "isbn", "order_id", "sku", "code"):
            return "".join(r.choice(string.ascii_uppercase + string.digits) for _ in range(r.randint(5, 10)))
        if k == "host":
            return r.choice(["localhost", "0.0.0.0", "db.internal", "api.example.com"])
        if k in ("tags", "hobbies", "roles", "genres", "skills", "alerts", "allowed_hosts", "courses"):
            return r.choice(TAGS)
        if k in ("description", "notes", "comment", "message", "note", "steps"):
            return f"{self._phrase(2, 6).capitalize()}."
        return self._phrase(1, 3) if r.random() < 0.7 else r.choice(NOUNS)

    def number_value(self, key: str | None, schema: dict, integer: bool) -> int | float:
        r = self.rng
        lo, hi = _RANGES.get(key or "", (None, None))
        if lo is None:
            scale = r.choice([10, 100, 1000, 100000])
            lo, hi = (-scale if r.random() < 0.1 else 0), scale
        lo, hi = max(lo, schema.get("minimum", lo)), min(hi, schema.get("maximum", hi))
        if integer:
            return r.randint(int(lo), int(hi))
        return round(r.uniform(lo, hi), r.choice([1, 2, 2, 3]))

    def instance(self, schema: dict, key: str | None = None, depth: int = 0) -> Any:
        """A JSON value valid against ``schema`` (the subset of keywords this module generates)."""
        r = self.rng
        if "enum" in schema:
            return r.choice(schema["enum"])
        kind = schema.get("type", "string")
        if isinstance(kind, list):
            kind = "null" if ("null" in kind and r.random() < 0.3) else [t for t in kind if t != "null"][0]
        if kind == "object":
            props, required = schema.get("properties", {}), set(schema.get("required", []))
            return {k: self.instance(s, k, depth + 1) for k, s in props.items()
                    if k in required or r.random() < 0.75}
        if kind == "array":
            n = r.randint(schema.get("minItems", 0), schema.get("maxItems", 4))
            return [self.instance(schema["items"], key, depth + 1) for _ in range(n)]
        if kind in ("integer", "number"):
            return self.number_value(key, schema, kind == "integer")
        if kind == "boolean":
            return r.random() < 0.5
        if kind == "null":
            return None
        return self.string_value(key, schema.get("format"))

    # ----- schemas ------------------------------------------------------------------------------
    def entity_schema(self, entity: str) -> dict:
        """An object schema over a random order-preserving subset of the entity's fields."""
        r = self.rng
        fields = ENTITIES[entity]
        keep = [f for f in fields if r.random() < 0.7] or fields[:2]
        if r.random() < 0.15:
            r.shuffle(keep)
        schema = _obj(*keep)
        if r.random() < 0.3:
            schema["required"] = [k for k in keep if r.random() < 0.6]
        if r.random() < 0.2:
            schema["additionalProperties"] = False
        return schema

    def random_schema(self, depth: int = 0) -> dict:
        """A schema of random shape over generic and typical field names."""
        r = self.rng
        roll = r.random()
        if depth < 2 and roll < 0.25:
            keys = r.sample(KEY_POOL, r.randint(1, 5))
            props = {k: self.random_schema(depth + 1) for k in keys}
            return {"type": "object", "properties": props, "required": [k for k in keys if r.random() < 0.7]}
        if depth < 2 and roll < 0.4:
            return _arr(self.random_schema(depth + 1), minItems=r.randint(0, 1), maxItems=r.randint(2, 4))
        if roll < 0.5:
            return {"type": "string", "enum": r.sample(WORDS + STATUSES, r.randint(2, 4))}
        if roll < 0.6:
            return {"type": "string", "format": r.choice(["date", "date-time", "email", "uri", "uuid"])}
        return {"type": r.choice(["string", "string", "integer", "number", "boolean", "null"])}

    def generic_object_schema(self) -> dict:
        r = self.rng
        keys = r.sample(KEY_POOL, r.randint(1, 6))
        props = {k: (field_schema(k) if r.random() < 0.5 else self.random_schema(1)) for k in keys}
        return {"type": "object", "properties": props, "required": list(keys)}

    # ----- rendering ----------------------------------------------------------------------------
    def dumps(self, value: Any) -> str:
        roll = self.rng.random()
        if roll < 0.35:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        if roll < 0.88:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=2, ensure_ascii=False)

    def sentence(self) -> str:
        r = self.rng
        forms = [f"The {r.choice(WORDS)} {r.choice(NOUNS)} {r.choice(VERBS)} the {r.choice(NOUNS)}.",
                 f"{self._name()} lives in {r.choice(CITIES)} and works as a {r.choice(JOBS)}.",
                 f"A {r.choice(NOUNS)} in {r.choice(CITIES)} costs {r.randint(2, 500)} dollars.",
                 f"Every {r.choice(['morning', 'evening', 'week'])} {r.choice(FIRST)} {r.choice(VERBS)} "
                 f"a {r.choice(WORDS)} {r.choice(NOUNS)}.",
                 f"JSON objects hold keys and values, like a {r.choice(NOUNS)} with a {r.choice(NOUNS)}."]
        return r.choice(forms)

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(1, 4)))


def chat(messages: list[tuple[str, str]]) -> str:
    """ChatML rendering identical to the demo tokenizer's chat template."""
    return "".join(f"{IM_START}{role}\n{content}{IM_END}\n" for role, content in messages)


SYSTEMS = ["You are a helpful assistant.", "You are a helpful assistant that answers in JSON.",
           "Respond only with valid JSON.", "You produce structured data as JSON."]


def json_request(gen: SampleGenerator) -> tuple[str, Any]:
    """A user request for JSON and the document that answers it."""
    r = gen.rng
    entity = gen.topic = r.choice(list(ENTITIES))
    roll = r.random()
    if roll < 0.1:
        n = r.randint(1, 3)
        schema = gen.entity_schema(entity)
        plural = PLURALS.get(entity, entity + "s")
        return f"Give me a JSON array of {n} {plural}.", [gen.instance(schema) for _ in range(n)]
    if roll < 0.45:
        schema = gen.entity_schema(entity)
        value = gen.instance(schema)
        fields = ", ".join(value) or "no fields"
        asks = [f"Give me a JSON object for a {entity}.", f"Generate a {entity} as JSON.",
                f"Create a JSON object describing a {entity} with the fields {fields}.",
                f"I need sample data for a {entity} in JSON.", f"Return a {entity} in JSON format.",
                f"Describe a {entity} as a JSON object with {fields}."]
        return r.choice(asks), value
    schema = gen.entity_schema(entity) if roll < 0.7 else gen.generic_object_schema()
    text = json.dumps(schema, separators=(",", ":")) if r.random() < 0.5 else json.dumps(schema)
    asks = [f"Return a JSON object that matches this schema: {text}", f"Respond with JSON. Schema: {text}",
            f"Generate JSON for the schema {text}", f"Fill in this JSON schema with example data:\n{text}"]
    return r.choice(asks), gen.instance(schema)


def english_request(gen: SampleGenerator) -> tuple[str, str]:
    r = gen.rng
    asks = [f"Tell me something about a {r.choice(NOUNS)}.", "Write a short sentence.",
            f"Say something about {r.choice(CITIES)}.", "Describe your day.", "What is JSON?"]
    ask = r.choice(asks)
    if ask == "What is JSON?":
        return ask, "JSON is a text format for data: objects with keys and values, arrays, strings, " \
                    "numbers, booleans and null."
    return ask, gen.paragraph()


def sample_text(gen: SampleGenerator) -> str:
    """One training text: a chat conversation, a raw JSON document, or English prose."""
    r = gen.rng
    roll = r.random()
    if roll < 0.75:
        turns = 2 if r.random() < 0.08 else 1
        messages = [("system", r.choice(SYSTEMS))] if r.random() < 0.4 else []
        for _ in range(turns):
            if r.random() < 0.88:
                ask, value = json_request(gen)
                messages += [("user", ask), ("assistant", gen.dumps(value))]
            else:
                messages += list(zip(("user", "assistant"), english_request(gen)))
        return chat(messages)
    if roll < 0.88:
        gen.topic = r.choice(list(ENTITIES))
        return gen.dumps(gen.instance(gen.entity_schema(gen.topic))) + END_OF_TEXT
    return gen.paragraph() + END_OF_TEXT


def iter_corpus(seed: int) -> Iterator[str]:
    """An endless, deterministic stream of training texts."""
    gen = SampleGenerator(seed)
    while True:
        yield sample_text(gen)


def corpus(seed: int, count: int) -> list[str]:
    """The first ``count`` training texts for ``seed``."""
    stream = iter_corpus(seed)
    return [next(stream) for _ in range(count)]
