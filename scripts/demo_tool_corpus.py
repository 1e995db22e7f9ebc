"""Tool-calling conversations for the demo model, in the Hermes format of its chat template.

A sample offers a few tools (JSON Schema signatures in a ``<tools>`` system block) and a user request;
the assistant answers with one or more ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``
blocks whose arguments copy the values named in the request, or in plain text when no tool fits. Some
samples go on with the tool's result (a ``tool`` turn) and a short answer in words. ``chat_with_tools``
renders exactly what ``scripts/train_demo_model.py``'s chat template renders for the same messages.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from demo_corpus import (CATEGORIES, CITIES, COUNTRIES, CURRENCIES, ENTITIES, FIRST, IM_END, IM_START, NOUNS,
                         SYSTEMS, SampleGenerator, english_request, json_request, sample_text)

TOOLS_INSTRUCTIONS = "# Tools\n<tools>\n"
CALL_INSTRUCTIONS = ("</tools>\nCall a tool with <tool_call>\n{\"name\": <name>, \"arguments\": <args>}\n"
                     "</tool_call>")
LANGUAGES = ["English", "French", "German", "Spanish", "Italian", "Japanese"]
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "IBM", "META", "ORCL", "SAP"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy"]


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool definition."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@dataclass(frozen=True)
class ToolKind:
    """One tool: its definition, how a user asks for it, and how its result reads in words."""

    tool: dict[str, Any]
    ask: Callable[[random.Random, SampleGenerator], tuple[str, dict[str, Any]]]  # -> (request, arguments)
    result: Callable[[random.Random, dict[str, Any]], tuple[Any, str]]  # -> (tool output, answer)

    @property
    def name(self) -> str:
        return self.tool["function"]["name"]


def _weather_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    city = r.choice(CITIES)
    if r.random() < 0.3:
        unit = r.choice(["celsius", "fahrenheit"])
        return r.choice([f"What's the weather in {city} in {unit}?", f"Weather in {city}, in {unit} please.",
                         f"How warm is it in {city}? Use {unit}."]), {"city": city, "unit": unit}
    return r.choice([f"What's the weather in {city}?", f"Is it raining in {city}?", f"How is the weather in {city} "
                     "today?", f"Tell me the weather for {city}.", f"Do I need an umbrella in {city}?"]), {"city": city}


def _weather_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    temperature, conditions = r.randint(-5, 35), r.choice(CONDITIONS)
    unit = args.get("unit", "celsius")
    return ({"temperature": temperature, "unit": unit, "conditions": conditions},
            f"It is {temperature} degrees {unit} and {conditions} in {args['city']}.")


def _stock_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    symbol = r.choice(SYMBOLS)
    return r.choice([f"What is the stock price of {symbol}?", f"How much is {symbol} trading at?",
                     f"Get me the latest {symbol} quote."]), {"symbol": symbol}


def _stock_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    price = round(r.uniform(10, 900), 2)
    return {"symbol": args["symbol"], "price": price}, f"{args['symbol']} trades at {price} dollars."


def _convert_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    amount = r.choice([r.randint(1, 1000), round(r.uniform(1, 500), 2)])
    source, target = r.sample(CURRENCIES, 2)
    return r.choice([f"Convert {amount} {source} to {target}.", f"How much is {amount} {source} in {target}?",
                     f"Change {amount} {source} into {target}."]), {"amount": amount, "from": source, "to": target}


def _convert_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    value = round(args["amount"] * r.uniform(0.5, 1.5), 2)
    return {"amount": value, "currency": args["to"]}, f"{args['amount']} {args['from']} is {value} {args['to']}."


def _email_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    to, subject = gen.string_value("email"), gen._phrase(1, 3)
    body = f"{gen._phrase(2, 5).capitalize()}."
    return r.choice([f"Send an email to {to} about {subject} saying: {body}",
                     f"Email {to} with the subject {subject}: {body}",
                     f"Write to {to} about {subject}. Tell them: {body}"]), {"to": to, "subject": subject, "body": body}


def _email_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    return {"sent": True}, f"The email to {args['to']} has been sent."


def _event_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    title, date = gen._phrase(1, 3).title(), gen._date()
    args: dict[str, Any] = {"title": title, "date": date}
    if r.random() < 0.5:
        args["location"] = r.choice(CITIES)
        return r.choice([f"Create an event {title} on {date} in {args['location']}.",
                         f"Add {title} to my calendar for {date} at {args['location']}."]), args
    return r.choice([f"Create an event {title} on {date}.", f"Schedule {title} for {date}.",
                     f"Put {title} in my calendar on {date}."]), args


def _event_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    return {"created": True, "id": r.randint(1, 9999)}, f"{args['title']} is in your calendar on {args['date']}."


def _search_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    query = gen._phrase(1, 2)
    args: dict[str, Any] = {"query": query}
    ask = r.choice([f"Find {query} for me.", f"Search the shop for {query}.", f"Look for {query}."])
    if r.random() < 0.4:
        args["max_price"] = r.randint(5, 500)
        ask = ask[:-1] + f" under {args['max_price']} dollars."
    if r.random() < 0.3:
        args["category"] = r.choice(CATEGORIES)
        ask = ask[:-1] + f" in {args['category']}."
    return ask, args


def _search_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    count = r.randint(0, 12)
    return {"results": count}, f"I found {count} products for {args['query']}."


def _reminder_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    text, time = gen._phrase(2, 4), f"{r.randint(0, 23):02d}:{r.choice([0, 15, 30, 45]):02d}"
    return r.choice([f"Remind me to {text} at {time}.", f"Set a reminder at {time}: {text}.",
                     f"At {time} remind me about {text}."]), {"text": text, "time": time}


def _reminder_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    return {"ok": True}, f"I will remind you at {args['time']}."


def _translate_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    text, language = gen.sentence(), r.choice(LANGUAGES)
    return r.choice([f"Translate to {language}: {text}", f"How do you say this in {language}? {text}"]), \
        {"text": text, "target_language": language}


def _translate_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    return {"translation": args["text"]}, f"Here is the text in {args['target_language']}."


def _population_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    country = r.choice(COUNTRIES)
    return r.choice([f"What is the population of {country}?", f"How many people live in {country}?"]), \
        {"country": country}


def _population_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    people = r.randint(1, 1400) * 1_000_000
    return {"population": people}, f"About {people} people live in {args['country']}."


def _table_ask(r: random.Random, gen: SampleGenerator) -> tuple[str, dict[str, Any]]:
    restaurant = f"{r.choice(FIRST)}'s {r.choice(['Bistro', 'Diner', 'Kitchen', 'Grill'])}"
    people, date = r.randint(1, 12), gen._date()
    return r.choice([f"Book a table for {people} at {restaurant} on {date}.",
                     f"Reserve {restaurant} for {people} people on {date}."]), \
        {"restaurant": restaurant, "people": people, "date": date}


def _table_result(r: random.Random, args: dict[str, Any]) -> tuple[Any, str]:
    return {"confirmed": True}, f"Your table for {args['people']} at {args['restaurant']} is booked."


_S, _I, _N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
TOOL_KINDS = [
    ToolKind(function("get_weather", "Get the current weather in a city.", _schema(
        {"city": {"type": "string", "description": "City name"},
         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"])), _weather_ask, _weather_result),
    ToolKind(function("get_stock_price", "Get the latest price of a stock.", _schema(
        {"symbol": {"type": "string", "pattern": "^[A-Z]{1,5}$"}}, ["symbol"])), _stock_ask, _stock_result),
    ToolKind(function("convert_currency", "Convert an amount of money between currencies.", _schema(
        {"amount": {"type": "number", "minimum": 0}, "from": {"type": "string", "enum": CURRENCIES},
         "to": {"type": "string", "enum": CURRENCIES}}, ["amount", "from", "to"])), _convert_ask, _convert_result),
    ToolKind(function("send_email", "Send an email.", _schema(
        {"to": {"type": "string", "format": "email"}, "subject": _S, "body": _S}, ["to", "subject", "body"])),
        _email_ask, _email_result),
    ToolKind(function("create_event", "Add an event to the calendar.", _schema(
        {"title": _S, "date": {"type": "string", "format": "date"}, "location": _S}, ["title", "date"])),
        _event_ask, _event_result),
    ToolKind(function("search_products", "Search the shop's products.", _schema(
        {"query": _S, "max_price": {"type": "number", "minimum": 0},
         "category": {"type": "string", "enum": CATEGORIES}}, ["query"])), _search_ask, _search_result),
    ToolKind(function("set_reminder", "Set a reminder for a time of day.", _schema(
        {"text": _S, "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}}, ["text", "time"])),
        _reminder_ask, _reminder_result),
    ToolKind(function("translate_text", "Translate a text.", _schema(
        {"text": _S, "target_language": {"type": "string", "enum": LANGUAGES}}, ["text", "target_language"])),
        _translate_ask, _translate_result),
    ToolKind(function("get_population", "Get the population of a country.", _schema(
        {"country": _S}, ["country"])), _population_ask, _population_result),
    ToolKind(function("book_table", "Book a restaurant table.", _schema(
        {"restaurant": _S, "people": {"type": "integer", "minimum": 1, "maximum": 20},
         "date": {"type": "string", "format": "date"}}, ["restaurant", "people", "date"])), _table_ask, _table_result),
]


def entity_tool(gen: SampleGenerator) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """A `create_<entity>` tool over a random entity schema, a request and its arguments."""
    r = gen.rng
    entity = gen.topic = r.choice([e for e in ENTITIES if len(ENTITIES[e]) <= 7])
    schema = gen.entity_schema(entity)
    args = gen.instance(schema)
    name = "create_" + entity.replace(" ", "_")
    described = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}" for k, v in args.items()) or "no fields"
    ask = r.choice([f"Add a {entity} with {described}.", f"Create a {entity}: {described}.",
                    f"Save this {entity}: {described}."])
    return function(name, f"Store a new {entity}.", schema), ask, args


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """One Hermes tool call as the chat template writes it."""
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def chat_with_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The demo chat template's rendering of `messages` (no generation prompt), with tools and calls."""
    out = []
    if tools:
        system = messages[0]["content"] + "\n\n" if messages and messages[0]["role"] == "system" else ""
        listed = "".join(json.dumps(t.get("function", t), ensure_ascii=False) + "\n" for t in tools)
        out.append(f"{IM_START}system\n{system}{TOOLS_INSTRUCTIONS}{listed}{CALL_INSTRUCTIONS}{IM_END}\n")
        if system:
            messages = messages[1:]
    for message in messages:
        content = message.get("content") or ""
        calls = [call_text(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])]
        body = "\n".join(([content] if content else []) + calls)
        out.append(f"{IM_START}{message['role']}\n{body}{IM_END}\n")
    return "".join(out)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def tool_conversation(gen: SampleGenerator) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One tool-use conversation: (messages, tools)."""
    r = gen.rng
    kinds = r.sample(TOOL_KINDS, r.choices([1, 2, 3], weights=[5, 4, 1])[0])
    tools = [k.tool for k in kinds]
    messages: list[dict[str, Any]] = [{"role": "system", "content": r.choice(SYSTEMS)}] if r.random() < 0.3 else []
    roll = r.random()
    if roll < 0.12:  # no tool fits: answer in words or JSON
        ask, answer = english_request(gen) if r.random() < 0.6 else json_request(gen)
        text = answer if isinstance(answer, str) else gen.dumps(answer)
        return messages + [{"role": "user", "content": ask}, {"role": "assistant", "content": text}], tools
    if roll < 0.3:  # a tool built from an entity schema
        tool, ask, args = entity_tool(gen)
        tools.insert(r.randint(0, len(tools)), tool)
        call = _call(tool["function"]["name"], args)
        return messages + [{"role": "user", "content": ask},
                           {"role": "assistant", "content": None, "tool_calls": [call]}], tools
    kind = r.choice(kinds)
    ask, args = kind.ask(r, gen)
    calls = [(kind, args)]
    if roll < 0.45:  # parallel calls: two requests of the same kind
        second_ask, second_args = kind.ask(r, gen)
        ask = f"{ask[:-1]}, and also: {second_ask[0].lower()}{second_ask[1:]}"
        calls.append((kind, second_args))
    messages += [{"role": "user", "content": ask},
                 {"role": "assistant", "content": None, "tool_calls": [_call(k.name, a) for k, a in calls]}]
    if r.random() < 0.35:  # the tool answers, then the assistant explains in words
        answers = []
        for k, a in calls:
            output, answer = k.result(r, a)
            messages.append({"role": "tool", "content": json.dumps(output, ensure_ascii=False)})
            answers.append(answer)
        messages.append({"role": "assistant", "content": " ".join(answers)})
    return messages, tools


def tool_sample_text(gen: SampleGenerator) -> str:
    messages, tools = tool_conversation(gen)
    return chat_with_tools(messages, tools)


def iter_training_texts(seed: int, tool_share: float) -> Iterator[str]:
    """The demo corpus (`demo_corpus.sample_text`) with a `tool_share` of tool-use conversations mixed in."""
    gen, tool_gen, pick = SampleGenerator(seed), SampleGenerator(seed + 10_007), random.Random(seed + 20_011)
    while True:
        yield tool_sample_text(tool_gen) if pick.random() < tool_share else sample_text(gen)


def training_texts(seed: int, count: int, tool_share: float) -> list[str]:
    """The first `count` texts of `iter_training_texts`."""
    stream = iter_training_texts(seed, tool_share)
    return [next(stream) for _ in range(count)]
