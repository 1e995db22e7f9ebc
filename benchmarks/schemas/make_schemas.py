"""Generate the JSON Schema benchmark set: real-world-style schemas, each with valid instances.

    .venv/bin/python benchmarks/schemas/make_schemas.py    # rewrites benchmarks/schemas/*.json

Each template builds a schema and matching instances from a seeded RNG, so every variant differs
(optional/required members, bounds, enums, additionalProperties, formats, nesting).  Members of an
instance appear in schema order (formwork, like llguidance and XGrammar, emits properties in schema
order).  Every instance is checked with `jsonschema` (formats asserted) before it is written.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema

OUT = Path(__file__).resolve().parent
VARIANTS = 5

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Linus", "Radia", "Ken"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Torvalds"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Perth", "Bergen", "Austin"]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "zeta"]


def _obj(props: dict, required: list[str], rng: random.Random, closed: bool | None = None) -> dict:
    schema = {"type": "object", "properties": props, "required": required}
    if closed if closed is not None else rng.random() < 0.5:
        schema["additionalProperties"] = False
    return schema


def _pick_optional(rng: random.Random, keys: list[str], keep: float = 0.6) -> list[str]:
    return [k for k in keys if rng.random() < keep]


def user_profile(rng):
    props = {
        "id": {"type": "string", "format": "uuid"},
        "username": {"type": "string", "pattern": "^[a-z][a-z0-9_]{2,15}$"},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 13, "maximum": 120},
        "role": {"enum": ["admin", "editor", "viewer"]},
        "verified": {"type": "boolean"},
    }
    req = ["id", "username", "email"] + _pick_optional(rng, ["role"])
    inst = {"id": "123e4567-e89b-42d3-a456-426614174000", "username": rng.choice(["ada_l", "ghopper", "turing42"]),
            "email": f"{rng.choice(FIRST).lower()}@example.com", "age": rng.randint(13, 120),
            "role": rng.choice(["admin", "editor", "viewer"]), "verified": rng.random() < 0.5}
    return _obj(props, req, rng), [inst]


def order(rng):
    item = {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
        "unit_price": {"type": "number", "minimum": 0, "maximum": 10000}},
        "required": ["sku", "quantity", "unit_price"], "additionalProperties": False}
    props = {"order_id": {"type": "integer", "minimum": 1},
             "status": {"enum": ["pending", "paid", "shipped", "cancelled"]},
             "items": {"type": "array", "items": item, "minItems": 1, "maxItems": rng.randint(3, 6)},
             "note": {"type": "string", "maxLength": 80}}
    items = [{"sku": f"ABC-{rng.randint(1000, 9999)}", "quantity": rng.randint(1, 5),
              "unit_price": round(rng.uniform(1, 200), 2)} for _ in range(rng.randint(1, 3))]
    inst = {"order_id": rng.randint(1, 10 ** 6), "status": "paid", "items": items}
    return _obj(props, ["order_id", "status", "items"], rng), [inst]


def event(rng):
    props = {"event": {"const": rng.choice(["page_view", "click", "signup"])},
             "timestamp": {"type": "string", "format": "date-time"},
             "session": {"type": "string", "format": "uuid"},
             "url": {"type": "string", "format": "uri"},
             "duration_ms": {"type": "integer", "minimum": 0, "maximum": 3600000}}
    inst = {"event": props["event"]["const"], "timestamp": "2024-03-01T12:30:45Z",
            "session": "9b2f7c3e-1d4a-4c8e-9f00-123456789abc", "url": "https://example.com/pricing?plan=pro",
            "duration_ms": rng.randint(0, 50000)}
    return _obj(props, ["event", "timestamp"] + _pick_optional(rng, ["session", "url"]), rng), [inst]


def server_config(rng):
    props = {"host": {"type": "string", "format": "hostname"},
             "port": {"type": "integer", "minimum": 1, "maximum": 65535},
             "tls": {"type": "boolean"},
             "workers": {"type": "integer", "minimum": 1, "maximum": 64},
             "log_level": {"enum": ["debug", "info", "warning", "error"]},
             "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 300}}
    inst = {"host": "api.example.org", "port": rng.choice([80, 443, 8080]), "tls": True,
            "workers": rng.randint(1, 64), "log_level": "info", "timeout_s": 30.5}
    return _obj(props, ["host", "port"], rng), [inst]


def address(rng):
    props = {"street": {"type": "string", "minLength": 1, "maxLength": 60},
             "city": {"type": "string", "minLength": 1, "maxLength": 40},
             "postal_code": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
             "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}
    inst = {"street": f"{rng.randint(1, 999)} Main St", "city": rng.choice(CITIES),
            "postal_code": "12345", "country": "US"}
    return _obj(props, ["street", "city", "country"], rng), [inst]


def payment(rng):
    card = {"type": "object", "properties": {"kind": {"const": "card"},
                                              "last4": {"type": "string", "pattern": "^[0-9]{4}$"},
                                              "exp_month": {"type": "integer", "minimum": 1, "maximum": 12}},
            "required": ["kind", "last4"], "additionalProperties": False}
    bank = {"type": "object", "properties": {"kind": {"const": "bank"},
                                              "iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{8,20}$"}},
            "required": ["kind", "iban"], "additionalProperties": False}
    combinator = rng.choice(["anyOf", "oneOf"])
    props = {"amount": {"type": "number", "minimum": 0.01, "maximum": 100000},
             "currency": {"enum": ["USD", "EUR", "GBP", "JPY"]},
             "method": {combinator: [card, bank]}}
    inst = {"amount": 42.5, "currency": "EUR",
            "method": rng.choice([{"kind": "card", "last4": "4242", "exp_month": 7},
                                  {"kind": "bank", "iban": "DE89370400440532013000"}])}
    return _obj(props, ["amount", "currency", "method"], rng), [inst]


def sensor_reading(rng):
    props = {"sensor_id": {"type": "string", "pattern": "^s-[0-9]{3}$"},
             "temperature_c": {"type": "number", "minimum": -40, "maximum": 85},
             "humidity": {"type": "number", "minimum": 0, "maximum": 100},
             "battery": {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 5},
             "taken_at": {"type": "string", "format": "date-time"}}
    inst = {"sensor_id": f"s-{rng.randint(100, 999)}", "temperature_c": round(rng.uniform(-10, 40), 1),
            "humidity": round(rng.uniform(10, 90), 1), "battery": 5 * rng.randint(0, 20),
            "taken_at": "2025-07-14T06:00:00+02:00"}
    return _obj(props, list(props)[:3], rng), [inst]


def calendar_event(rng):
    props = {"title": {"type": "string", "minLength": 1, "maxLength": 50},
             "date": {"type": "string", "format": "date"},
             "start": {"type": "string", "format": "time"},
             "duration": {"type": "string", "format": "duration"},
             "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 5},
             "recurring": {"type": "boolean"}}
    inst = {"title": "Weekly sync", "date": "2025-01-06", "start": "09:30:00Z", "duration": "PT45M",
            "attendees": ["ada@example.com", "grace@example.org"], "recurring": True}
    return _obj(props, ["title", "date"], rng), [inst]


def issue(rng):
    label = {"type": "string", "enum": ["bug", "feature", "docs", "question", "wontfix"]}
    props = {"number": {"type": "integer", "minimum": 1},
             "title": {"type": "string", "maxLength": 100},
             "state": {"enum": ["open", "closed"]},
             "labels": {"type": "array", "items": label, "maxItems": 3},
             "assignee": {"type": ["string", "null"]},
             "created_at": {"type": "string", "format": "date-time"}}
    inst = {"number": rng.randint(1, 5000), "title": "Masks are wrong for byte-fallback tokens",
            "state": "open", "labels": ["bug"], "assignee": None, "created_at": "2024-11-02T10:00:00Z"}
    return _obj(props, ["number", "title", "state"], rng), [inst]


def feature_flags(rng):
    flag = {"type": "object", "properties": {"enabled": {"type": "boolean"},
                                              "rollout": {"type": "integer", "minimum": 0, "maximum": 100}},
            "required": ["enabled"], "additionalProperties": False}
    schema = {"type": "object", "patternProperties": {"^[a-z][a-z_]{1,20}$": flag},
              "additionalProperties": False, "maxProperties": rng.randint(3, 6)}
    inst = {"dark_mode": {"enabled": True, "rollout": 50}, "new_checkout": {"enabled": False}}
    return schema, [inst]


def survey(rng):
    n = rng.randint(3, 6)
    answer = {"type": "integer", "minimum": 1, "maximum": 5}
    props = {"respondent": {"type": "string", "format": "uuid"},
             "answers": {"type": "array", "items": answer, "minItems": n, "maxItems": n},
             "comment": {"type": "string", "maxLength": 140},
             "nps": {"type": "integer", "minimum": 0, "maximum": 10}}
    inst = {"respondent": "0f8fad5b-d9cb-469f-a165-70867728950e",
            "answers": [rng.randint(1, 5) for _ in range(n)], "comment": "Fast and helpful", "nps": 9}
    return _obj(props, ["respondent", "answers"], rng), [inst]


def weather(rng):
    props = {"city": {"enum": CITIES},
             "conditions": {"enum": ["sunny", "cloudy", "rain", "snow", "fog"]},
             "temp_f": {"type": "integer", "minimum": -60, "maximum": 130},
             "wind_kph": {"type": "number", "minimum": 0, "maximum": 250},
             "alerts": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 3}}
    inst = {"city": rng.choice(CITIES), "conditions": "rain", "temp_f": rng.randint(-10, 100),
            "wind_kph": 12.5, "alerts": []}
    return _obj(props, ["city", "conditions", "temp_f"], rng), [inst]


def book(rng):
    author = {"type": "object", "properties": {"first": {"type": "string"}, "last": {"type": "string"}},
              "required": ["last"]}
    props = {"isbn": {"type": "string", "pattern": "^97[89]-[0-9]{10}$"},
             "title": {"type": "string", "minLength": 1},
             "authors": {"type": "array", "items": author, "minItems": 1, "maxItems": 4},
             "year": {"type": "integer", "minimum": 1450, "maximum": 2030},
             "genres": {"type": "array", "items": {"enum": ["fiction", "science", "history", "poetry"]}}}
    inst = {"isbn": "978-0262033848", "title": "Introduction to Algorithms",
            "authors": [{"first": "Thomas", "last": "Cormen"}, {"last": "Leiserson"}],
            "year": 2009, "genres": ["science"]}
    return _obj(props, ["isbn", "title", "authors"], rng, closed=rng.random() < 0.7), [inst]


def employee(rng):
    schema = {"$defs": {"money": {"type": "object", "properties": {
        "amount": {"type": "number", "minimum": 0}, "currency": {"enum": ["USD", "EUR"]}},
        "required": ["amount", "currency"], "additionalProperties": False}},
        "type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40},
            "department": {"enum": ["eng", "sales", "ops", "legal"]},
            "salary": {"$ref": "#/$defs/money"},
            "bonus": {"$ref": "#/$defs/money"},
            "manager_id": {"type": "integer", "minimum": 1}},
        "required": ["name", "department", "salary"]}
    if rng.random() < 0.5:
        schema["additionalProperties"] = False
    inst = {"name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "department": "eng",
            "salary": {"amount": 120000, "currency": "USD"}, "manager_id": 7}
    return schema, [inst]


def invoice(rng):
    line = {"type": "object", "properties": {"description": {"type": "string", "maxLength": 60},
                                              "hours": {"type": "number", "minimum": 0, "maximum": 200},
                                              "rate": {"type": "number", "minimum": 0}},
            "required": ["description", "hours", "rate"], "additionalProperties": False}
    props = {"invoice_no": {"type": "string", "pattern": "^INV-[0-9]{6}$"},
             "issued": {"type": "string", "format": "date"},
             "due": {"type": "string", "format": "date"},
             "lines": {"type": "array", "items": line, "minItems": 1},
             "paid": {"type": "boolean"}}
    inst = {"invoice_no": f"INV-{rng.randint(100000, 999999)}", "issued": "2025-02-01", "due": "2025-03-03",
            "lines": [{"description": "Consulting", "hours": 12.5, "rate": 150}], "paid": False}
    return _obj(props, ["invoice_no", "issued", "lines"], rng), [inst]


def shipment(rng):
    checkpoint = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"},
                                                    "location": {"type": "string"},
                                                    "status": {"enum": ["picked_up", "in_transit", "delivered"]}},
                  "required": ["at", "status"], "additionalProperties": False}
    props = {"tracking": {"type": "string", "pattern": "^1Z[0-9A-Z]{16}$"},
             "carrier": {"enum": ["UPS", "DHL", "FedEx"]},
             "weight_kg": {"type": "number", "exclusiveMinimum": 0, "maximum": 70},
             "checkpoints": {"type": "array", "items": checkpoint, "maxItems": 4}}
    inst = {"tracking": "1Z999AA10123456784", "carrier": "UPS", "weight_kg": 2.4,
            "checkpoints": [{"at": "2025-05-01T08:00:00Z", "location": "Austin", "status": "picked_up"}]}
    return _obj(props, ["tracking", "carrier"], rng), [inst]


def chat_message(rng):
    props = {"role": {"enum": ["system", "user", "assistant", "tool"]},
             "content": {"type": "string", "maxLength": 500},
             "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
             "tool_call_id": {"type": "string"}}
    inst = {"role": "assistant", "content": "The capital of Portugal is Lisbon."}
    return _obj(props, ["role", "content"], rng), [inst]


def tool_call(rng):
    tools = {
        "get_weather": {"location": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "search_flights": {"origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                           "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
                           "date": {"type": "string", "format": "date"},
                           "passengers": {"type": "integer", "minimum": 1, "maximum": 9}},
        "send_email": {"to": {"type": "string", "format": "email"}, "subject": {"type": "string", "maxLength": 80},
                       "body": {"type": "string"}},
    }
    name = rng.choice(sorted(tools))
    args = {"type": "object", "properties": tools[name], "required": list(tools[name]),
            "additionalProperties": False}
    schema = {"type": "object", "properties": {"name": {"const": name}, "arguments": args},
              "required": ["name", "arguments"], "additionalProperties": False}
    examples = {"get_weather": {"location": "Bergen", "unit": "celsius"},
                "search_flights": {"origin": "LIS", "destination": "NBO", "date": "2025-09-12", "passengers": 2},
                "send_email": {"to": "ops@example.com", "subject": "Deploy done", "body": "All green."}}
    return schema, [{"name": name, "arguments": examples[name]}]


def search_query(rng):
    props = {"q": {"type": "string", "minLength": 1, "maxLength": 120},
             "page": {"type": "integer", "minimum": 1, "maximum": 1000},
             "per_page": {"enum": [10, 20, 50, 100]},
             "sort": {"enum": ["relevance", "newest", "oldest"]},
             "filters": {"type": "object", "properties": {
                 "language": {"type": "string", "pattern": "^[a-z]{2}$"},
                 "min_stars": {"type": "integer", "minimum": 0}}, "additionalProperties": False}}
    inst = {"q": "structured generation", "page": 1, "per_page": 20, "sort": "newest",
            "filters": {"language": "en", "min_stars": 100}}
    return _obj(props, ["q"], rng), [inst]


def log_entry(rng):
    props = {"ts": {"type": "string", "format": "date-time"},
             "level": {"enum": ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]},
             "service": {"type": "string", "pattern": "^[a-z-]{3,20}$"},
             "message": {"type": "string", "maxLength": 200},
             "client_ip": {"type": "string", "format": "ipv4"},
             "latency_ms": {"type": "number", "minimum": 0}}
    inst = {"ts": "2025-06-30T23:59:59.120Z", "level": "WARN", "service": "api-gateway",
            "message": "upstream slow", "client_ip": "10.0.3.17", "latency_ms": 812.4}
    return _obj(props, ["ts", "level", "message"], rng), [inst]


def product(rng):
    variant = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue", "black"]},
                                                 "size": {"enum": ["S", "M", "L", "XL"]},
                                                 "stock": {"type": "integer", "minimum": 0}},
               "required": ["color", "stock"]}
    props = {"name": {"type": "string", "minLength": 2, "maxLength": 60},
             "price": {"type": "number", "minimum": 0, "maximum": 99999.99},
             "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5},
             "variants": {"type": "array", "items": variant, "maxItems": 3},
             "homepage": {"type": "string", "format": "uri"}}
    inst = {"name": "Trail shoe", "price": 129.99, "tags": ["outdoor", "running"],
            "variants": [{"color": "blue", "size": "M", "stock": 12}]}
    return _obj(props, ["name", "price"], rng), [inst]


def movie(rng):
    props = {"title": {"type": "string"},
             "year": {"type": "integer", "minimum": 1888, "maximum": 2030},
             "rating": {"type": "number", "minimum": 0, "maximum": 10},
             "genres": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
             "director": {"type": "object", "properties": {"name": {"type": "string"},
                                                           "born": {"type": "integer"}}, "required": ["name"]}}
    inst = {"title": "Arrival", "year": 2016, "rating": 7.9, "genres": ["drama", "sci-fi"],
            "director": {"name": "Denis Villeneuve", "born": 1967}}
    return _obj(props, ["title", "year"], rng), [inst]


def geo_point(rng):
    schema = {"type": "object", "properties": {
        "type": {"const": "Point"},
        "coordinates": {"type": "array", "prefixItems": [
            {"type": "number", "minimum": -180, "maximum": 180},
            {"type": "number", "minimum": -90, "maximum": 90}], "items": False, "minItems": 2}},
        "required": ["type", "coordinates"], "additionalProperties": False}
    return schema, [{"type": "Point", "coordinates": [round(rng.uniform(-180, 180), 4),
                                                      round(rng.uniform(-90, 90), 4)]}]


def api_error(rng):
    schema = {"type": "object", "properties": {
        "error": {"type": "object", "properties": {
            "code": {"type": "integer", "minimum": 400, "maximum": 599},
            "message": {"type": "string"},
            "details": {"type": "array", "items": {"type": "object", "properties": {
                "field": {"type": "string"}, "issue": {"type": "string"}}, "required": ["field", "issue"]}}},
            "required": ["code", "message"]},
        "request_id": {"type": "string", "format": "uuid"}}, "required": ["error"]}
    inst = {"error": {"code": rng.choice([400, 404, 422, 503]), "message": "invalid input",
                      "details": [{"field": "email", "issue": "missing"}]},
            "request_id": "c9bf9e57-1685-4c89-bafb-ff5af830be8a"}
    return schema, [inst]


def classification(rng):
    labels = rng.sample(WORDS, rng.randint(3, 7))
    schema = {"type": "object", "properties": {
        "label": {"enum": labels}, "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string", "maxLength": 300}},
        "required": ["reasoning", "label", "confidence"], "additionalProperties": False}
    if rng.random() < 0.5:
        schema["properties"] = {k: schema["properties"][k] for k in ("reasoning", "label", "confidence")}
    inst = {k: {"label": labels[0], "confidence": 0.87, "reasoning": "Keywords match."}[k]
            for k in schema["properties"]}
    return schema, [inst]


def extraction(rng):
    person = {"type": "object", "properties": {"name": {"type": "string"},
                                                "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 150},
                                                "city": {"type": "string"}}, "required": ["name"],
              "additionalProperties": False}
    schema = {"type": "object", "properties": {"people": {"type": "array", "items": person, "maxItems": 5},
                                               "count": {"type": "integer", "minimum": 0}},
              "required": ["people", "count"], "additionalProperties": False}
    inst = {"people": [{"name": "Ada", "age": 36, "city": "London"}, {"name": "Alan", "age": None}], "count": 2}
    return schema, [inst]


def kube_container(rng):
    port = {"type": "object", "properties": {"containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
                                              "protocol": {"enum": ["TCP", "UDP"]}},
            "required": ["containerPort"], "additionalProperties": False}
    env = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$"},
                                             "value": {"type": "string"}}, "required": ["name", "value"],
           "additionalProperties": False}
    props = {"name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
             "image": {"type": "string", "minLength": 1},
             "ports": {"type": "array", "items": port, "maxItems": 4},
             "env": {"type": "array", "items": env, "maxItems": 4},
             "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]}}
    inst = {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "MODE", "value": "prod"}], "imagePullPolicy": "IfNotPresent"}
    return _obj(props, ["name", "image"], rng), [inst]


def network_rule(rng):
    props = {"action": {"enum": ["allow", "deny"]},
             "source": {"type": "string", "format": "ipv4"},
             "destination": {"type": "string", "format": "ipv6"},
             "port_range": {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 65535},
                                                             {"type": "integer", "minimum": 0, "maximum": 65535}],
                            "items": False},
             "priority": {"type": "integer", "minimum": 100, "maximum": 4096, "multipleOf": 10}}
    inst = {"action": "allow", "source": "192.168.1.10", "destination": "2001:db8::1",
            "port_range": [443, 443], "priority": 10 * rng.randint(10, 409)}
    return _obj(props, ["action", "source"], rng), [inst]


def recipe(rng):
    ingredient = {"type": "object", "properties": {"item": {"type": "string"},
                                                    "grams": {"type": "integer", "minimum": 1, "maximum": 5000}},
                  "required": ["item", "grams"], "additionalProperties": False}
    props = {"name": {"type": "string", "maxLength": 60},
             "servings": {"type": "integer", "minimum": 1, "maximum": 12},
             "ingredients": {"type": "array", "items": ingredient, "minItems": 1, "maxItems": 8},
             "steps": {"type": "array", "items": {"type": "string", "maxLength": 120}, "minItems": 1},
             "vegetarian": {"type": "boolean"}}
    inst = {"name": "Pancakes", "servings": 4, "ingredients": [{"item": "flour", "grams": 250},
                                                               {"item": "milk", "grams": 500}],
            "steps": ["Mix.", "Fry."], "vegetarian": True}
    return _obj(props, ["name", "ingredients", "steps"], rng), [inst]


TEMPLATES = [user_profile, order, event, server_config, address, payment, sensor_reading,
             calendar_event, issue, feature_flags, survey, weather, book, employee, invoice,
             shipment, chat_message, tool_call, search_query, log_entry, product, movie, geo_point,
             api_error, classification, extraction, kube_container, network_rule, recipe]


def _objects(schema: dict, instances: list) -> list[tuple[dict, list]]:
    """Every object sub-schema reached through properties and items, with its instance values."""
    found = [(schema, instances)]
    for key, sub in schema.get("properties", {}).items():
        values = [inst[key] for inst in instances if key in inst]
        if values and all(isinstance(v, dict) for v in values) and sub.get("type") == "object":
            found += _objects(sub, values)
        items = sub.get("items")
        if values and all(isinstance(v, list) for v in values) and isinstance(items, dict) \
                and items.get("type") == "object":
            elements = [e for v in values for e in v]
            if elements:
                found += _objects(items, elements)
    return found


def _vary(schema: dict, instances: list, rng: random.Random) -> None:
    """Change the language of `schema` in a way its instances still satisfy: a tighter or looser
    bound, one more required member, or a closed/open switch, on the schema or an object inside it
    (used when a template's random choices repeat an earlier variant, so that every case is a
    distinct schema)."""
    schema, instances = rng.choice(_objects(schema, instances))
    props = schema.get("properties", {})
    present = [k for k in props if all(k in inst for inst in instances)]
    strings = [k for k in present if props[k].get("type") == "string"
               and not {"format", "pattern", "enum", "const"} & props[k].keys()]
    numbers = [k for k in present if props[k].get("type") in ("integer", "number")]
    optional = [k for k in present if k not in schema.get("required", [])]
    choice = rng.randrange(4)
    if not props:  # a map of members: another bound on their count
        schema["maxProperties"] = max(len(inst) for inst in instances) + rng.randint(0, 12)
    elif choice == 0 and strings:
        key = rng.choice(strings)
        longest = max(len(inst[key]) for inst in instances)
        props[key] = {**props[key], "maxLength": longest + rng.randint(4, 120)}
    elif choice == 1 and numbers:
        key = rng.choice(numbers)
        top = max(inst[key] for inst in instances)
        props[key] = {**props[key], "maximum": max(top, props[key].get("maximum", top)) + rng.randint(1, 10 ** 6)}
    elif choice == 2 and optional:
        added = rng.choice(optional)
        schema["required"] = [k for k in props if k in schema.get("required", []) or k == added]
    elif schema.get("additionalProperties") is False:
        del schema["additionalProperties"]
    else:
        schema["additionalProperties"] = False


def main() -> None:
    for old in OUT.glob("*.json"):
        old.unlink()
    count = 0
    seen: set[str] = set()
    for template in TEMPLATES:
        for variant in range(VARIANTS if template not in (geo_point, api_error) else 2):
            rng = random.Random(f"{template.__name__}-{variant}")
            schema, instances = template(rng)
            for _ in range(1000):  # every case a distinct schema
                if json.dumps(schema, sort_keys=True) not in seen:
                    break
                _vary(schema, instances, rng)
            else:
                raise RuntimeError(f"{template.__name__}: no distinct variant {variant}")
            seen.add(json.dumps(schema, sort_keys=True))
            schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
            for inst in instances:
                jsonschema.validate(inst, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            name = f"{count:03d}_{template.__name__}_{variant}"
            (OUT / f"{name}.json").write_text(json.dumps({"schema": schema, "instances": instances}, indent=1) + "\n")
            count += 1
    print(f"wrote {count} distinct schemas to {OUT}")


if __name__ == "__main__":
    main()
