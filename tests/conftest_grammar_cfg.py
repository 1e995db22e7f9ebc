"""Grammars and helpers shared by the context-free grammar tests and the benchmark."""
from __future__ import annotations

from collections import deque

from formwork.grammar.dfa import DEAD

JSON_LARK = r"""
?start: value
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" [member ("," member)*] "}"
member: STRING ":" value
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
WS: /[ \t\n\r]+/
%ignore WS
"""

ARITH_LARK = r"""
?start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul | product "/" atom -> div
?atom: NUMBER | "-" atom -> neg | "(" sum ")"
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
"""

SQL_LARK = r"""
start: select_stmt ";"?
select_stmt: "SELECT"i ["DISTINCT"i] columns "FROM"i table_ref where? order_by? limit?
columns: "*" | column ("," column)*
column: expr ["AS"i NAME]
table_ref: NAME ("," NAME)*
where: "WHERE"i condition
?condition: condition "OR"i conj | conj
?conj: conj "AND"i comparison | comparison
?comparison: expr OP expr | "(" condition ")" | "NOT"i comparison
?expr: expr "+" term | term
?term: NAME ("." NAME)? | NUMBER | STRING | NAME "(" [expr ("," expr)*] ")"
order_by: "ORDER"i "BY"i expr ("ASC"i | "DESC"i)?
limit: "LIMIT"i INT
OP: "=" | "<>" | "<=" | ">=" | "<" | ">"
NAME: /[a-z_][a-z0-9_]*/
STRING: /'[^']*'/
%import common.NUMBER
%import common.INT
%import common.WS
%ignore WS
"""

LEFT_LIST_LARK = r"""
start: list
list: list "," ITEM | ITEM
ITEM: /[a-z]+/
"""

AMBIGUOUS_LARK = r"""
start: e
e: e e | e "+" e | "a" | "(" e ")"
"""

JSON_GBNF = r"""
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n]{0,4}
"""


class NoCompletion(AssertionError):
    """No completion within the search bound."""


def accepts(grammar, text: str) -> bool:
    """The whole of `text` is a complete sentence of the compiled grammar."""
    m = grammar.matcher()
    return m.accept_string(text) and m.can_terminate()


def shortest_completion(dfa, state: int, max_states: int = 3000) -> bytes:
    """Fewest bytes that take `state` to an accepting state (breadth-first over the automaton)."""
    parent: dict[int, tuple[int, int]] = {state: (-1, -1)}
    queue = deque([state])
    while queue:
        s = queue.popleft()
        if dfa.accepting[s]:
            out = bytearray()
            while parent[s][0] != -1:
                s, b = parent[s]
                out.append(b)
            return bytes(reversed(out))
        row = dfa.row(s)
        for b in range(256):
            t = int(row[b])
            if t != DEAD and t not in parent:
                parent[t] = (s, b)
                queue.append(t)
        if len(parent) > max_states:
            break
    raise NoCompletion(f"no completion within {max_states} states")


CLOSERS = (b'"', b")", b"]", b"}", b"0", b"a", b" from t")


def complete(dfa, state: int, closers: tuple[bytes, ...] = CLOSERS, max_rounds: int = 400) -> bytes:
    """A completion of a live state: a short breadth-first search, and while that fails (deep
    nesting), the first closing string that keeps the text alive, then search again."""
    out = b""
    for _ in range(max_rounds):
        try:
            return out + shortest_completion(dfa, state)
        except NoCompletion:
            pass
        for closer in closers:
            nxt = dfa.walk(state, closer)
            if nxt != DEAD:
                out, state = out + closer, nxt
                break
        else:
            raise AssertionError(f"no closer keeps {out!r} alive")
    raise AssertionError("no completion found")
