"""Typed outputs: ask formwork for a type, get an instance of that type back.

    python examples/typed_output.py [MODEL_DIR]     # default: the embedded demo model
"""
import sys
from typing import Literal

from pydantic import BaseModel, Field

from formwork.sdk import LLM, Choice, Regex


class Review(BaseModel):
    title: str = Field(max_length=24)
    stars: int = Field(ge=1, le=5)
    mood: Literal["happy", "neutral", "sad"]
    recommended: bool


llm = LLM(sys.argv[1] if len(sys.argv) > 1 else None)

# A chat conversation in, a validated `Review` out (the schema is enforced while decoding).
review = llm.generate([{"role": "user", "content": "Review the film Metropolis as JSON."}],
                      output_type=Review, temperature=0)
assert isinstance(review, Review) and 1 <= review.stars <= 5
print(review)

# A regular expression or a fixed set of answers works the same way; both return a `str`.
ticket = llm.generate("Ticket number:", output_type=Regex(r"[A-Z]{3}-\d{4}"), temperature=0)
answer = llm.generate("Is the sky blue?", output_type=Choice(["yes", "no"]), temperature=0)
print(ticket, answer)
