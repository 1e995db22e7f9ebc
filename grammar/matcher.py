"""Matcher: per-request state machine over a compiled grammar (masks, accept, rollback)."""
from __future__ import annotations

import codecs
from typing import TYPE_CHECKING

import numpy as np
import torch

from formwork.grammar.dfa import DEAD, START
from formwork.grammar.errors import GrammarError, RollbackError
from formwork.grammar.stored_mask import StoredMask
from formwork.grammar.unique_tracker import UniqueTracker

if TYPE_CHECKING:
    from formwork.grammar.compiler import CompiledGrammar

MAX_STATE_MASKS = 1024  # masks a grammar keeps by its own state ids (a shortcut past the shared cache)
MAX_TOKEN_STEPS = 1 << 14  # (state, token) moves a grammar keeps (a shortcut past the byte walk)
_last_view: tuple[torch.Tensor, int, np.ndarray] | None = None  # see Matcher._numpy_view


class Matcher:
    """Tracks one generation against a CompiledGrammar.

    A step is one accepted token (or one accepted string); `rollback(n)` undoes n steps.
    A stop token is accepted only where the grammar can end; afterwards the matcher is
    terminated and accepts nothing (its mask is all zeros).  A grammar with unique arrays
    (`grammar.unique`) also compares their items (`unique_tracker`): one attribute check elsewhere.
    """

    def __init__(self, grammar: "CompiledGrammar", max_step_seconds: float | None = 1.0):
        self.grammar = grammar
        self.vocab = grammar.vocab
        self._dfa = grammar.dfa
        self._stops = frozenset(self.vocab.stop_token_ids)
        self.max_step_seconds = max_step_seconds
        self._state = START
        self._terminated = False
        self._history: list[tuple[int, bool]] = []
        self._words = (self.vocab.vocab_size + 31) // 32
        self._unique = None if grammar.unique is None else UniqueTracker(grammar.unique, self.vocab)
        self._vocab_size = self.vocab.vocab_size
        self._accepting = self._dfa.accepting  # the known states' flags, fetched again past its end

    # ------------------------------------------------------------ masks
    def fill_next_token_bitmask(self, bitmask: torch.Tensor, index: int = 0) -> None:
        """Write the allowed-token mask for the next step into row `index` of `bitmask`."""
        self.fill_row(self._numpy_view(bitmask), index)

    def fill_row(self, view: np.ndarray, index: int) -> None:
        """`fill_next_token_bitmask` into a numpy bitmask already checked to be C-contiguous int32 of this
        vocabulary's width (an engine filling many rows of one buffer checks it once)."""
        failed = Matcher.fill_rows(view, [(index, self)])
        if failed:
            raise failed[0][1]

    @staticmethod
    def fill_rows(view: np.ndarray, rows: list[tuple[int, "Matcher"]]) -> list[tuple[int, Exception]]:
        """`fill_row(view, index)` of each (index, matcher) in `rows`, in one call; returns the rows whose
        mask could not be computed (a budget overrun), with the exception (such a row is left as it was)."""
        failed = []
        for index, matcher in rows:
            if matcher._terminated:
                view[index] = 0
                continue
            stored = matcher.grammar.state_masks.get(matcher._state)  # `_stored_mask`'s shortcut, inline
            try:
                if stored is None:
                    stored = matcher._stored_mask()
                stored.write(view, index)
                if matcher._unique is not None:
                    matcher._unique.filter(view, index)
            except Exception as exc:
                failed.append((index, exc))
        return failed

    def _numpy_view(self, bitmask: torch.Tensor) -> np.ndarray:
        """A numpy alias of the (CPU, int32, (batch, words)) bitmask, checked once per tensor:
        the last one seen is remembered across matchers (an engine reuses one bitmask)."""
        global _last_view
        cached = _last_view
        if cached is not None and cached[0] is bitmask and cached[1] == bitmask.data_ptr() \
                and cached[2].shape[1] == self._words:
            return cached[2]
        words = self._words
        if (not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32 or bitmask.dim() != 2
                or bitmask.shape[1] != words or bitmask.device.type != "cpu" or not bitmask.is_contiguous()):
            shape = tuple(bitmask.shape) if isinstance(bitmask, torch.Tensor) else type(bitmask).__name__
            raise GrammarError(f"bitmask must be a contiguous CPU torch.int32 tensor of shape (batch, {words}); "
                               f"got {shape}")
        view = bitmask.numpy()
        _last_view = (bitmask, bitmask.data_ptr(), view)  # (the view keeps the tensor alive anyway)
        return view

    def next_token_mask(self) -> np.ndarray:
        """Packed int32 mask words of the current state (read-only)."""
        if self._unique is not None:
            out = np.zeros((1, self._words), dtype=np.int32)
            self._stored_mask().write(out, 0)
            self._unique.filter(out, 0)
            return out[0]
        return self._stored_mask().dense()

    def _stored_mask(self) -> StoredMask:
        masks = self.grammar.state_masks
        got = masks.get(self._state)
        if got is None:
            got = self.grammar.mask_cache.stored(self._dfa, self._state, self.max_step_seconds)
            if len(masks) >= MAX_STATE_MASKS:
                masks.clear()
            masks[self._state] = got
        return got

    # ------------------------------------------------------------ advancing
    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) if the grammar forbids it."""
        if self._terminated or not 0 <= token_id < self._vocab_size:
            return False
        if token_id in self._stops:
            if not self._accepts(self._state):
                return False
            if self._unique is not None:
                self._unique.hold()
            self._push(self._state, True)
            return True
        if self._unique is not None:  # the tracker reads the token's bytes
            data = self.vocab.token_bytes[token_id]
            return data is not None and self._advance(data)
        steps = self.grammar.token_steps
        state = self._state
        key = state * self._vocab_size + token_id
        nxt = steps.get(key)
        if nxt is None:
            data = self.vocab.token_bytes[token_id]
            nxt = DEAD if data is None else self._dfa.walk(state, data)
            if len(steps) < MAX_TOKEN_STEPS:
                steps[key] = nxt
        if nxt == DEAD:
            return False
        self._history.append((state, False))  # `_push`, inline: not terminated before or after
        self._state = nxt
        return True

    def advance(self, token_id: int) -> int:
        """`accept_token(token_id)`, and whether a stop token may follow: 0 refused (state unchanged),
        1 accepted, 2 accepted and `can_terminate()` (one call where a step needs both)."""
        state = self._state
        nxt = None
        if not self._terminated and self._unique is None and 0 <= token_id < self._vocab_size:
            nxt = self.grammar.token_steps.get(state * self._vocab_size + token_id)  # never a stop token's
        if not nxt:  # not kept yet, or DEAD (0): the full path
            if not self.accept_token(token_id):
                return 0
            return 2 if self.can_terminate() else 1
        self._history.append((state, False))  # `_push`, inline: not terminated before or after
        self._state = nxt
        return 2 if self._accepts(nxt) else 1

    def accept_string(self, text: str | bytes) -> bool:
        """Advance by the bytes of `text` as one step (all or nothing)."""
        if self._terminated:
            return False
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return self._advance(data)

    def _advance(self, data: bytes) -> bool:
        nxt = self._dfa.walk(self._state, data)
        if nxt == DEAD:
            return False
        if self._unique is not None:
            advanced = self._unique.advance(data)
            if advanced is None:
                return False
            self._unique.commit(advanced)
        self._push(nxt, False)
        return True

    def _push(self, state: int, terminated: bool) -> None:
        self._history.append((self._state, self._terminated))
        self._state, self._terminated = state, terminated

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last `num_tokens` steps exactly."""
        if num_tokens < 0 or num_tokens > len(self._history):
            raise RollbackError(f"cannot roll back {num_tokens} steps; {len(self._history)} accepted")
        if num_tokens:
            self._state, self._terminated = self._history[-num_tokens]
            del self._history[-num_tokens:]
            if self._unique is not None:
                self._unique.rollback(num_tokens)

    def reset(self) -> None:
        """Back to the start state with an empty history."""
        self._state, self._terminated = START, False
        self._history.clear()
        if self._unique is not None:
            self._unique.reset()

    # ------------------------------------------------------------ queries
    def is_terminated(self) -> bool:
        """A stop token has been accepted."""
        return self._terminated

    def can_terminate(self) -> bool:
        """The output so far is complete, so a stop token is allowed now."""
        return not self._terminated and self._accepts(self._state)

    def _accepts(self, state: int) -> bool:
        """Whether DFA state `state` (a reached one) is accepting."""
        accepting = self._accepting
        if state >= len(accepting):  # a state the automaton built after this matcher last looked
            accepting = self._accepting = self._dfa.accepting
        return bool(accepting[state])

    def is_complete(self) -> bool:
        """Nothing but a stop token may follow (or one was accepted): the output is finished.
        Kept per state (`grammar.state_complete`) where the state alone decides the mask."""
        if self._terminated:
            return True
        if not self._accepts(self._state):
            return False
        if self._unique is not None:
            return not self._allows_text(self.next_token_mask())
        known = self.grammar.state_complete
        got = known.get(self._state)
        if got is None:
            got = not self._allows_text(self._stored_mask().dense())
            if len(known) >= MAX_STATE_MASKS:
                known.clear()
            known[self._state] = got
        return got

    def _allows_text(self, words: np.ndarray) -> bool:
        """Whether packed mask `words` allow any token that is not a stop token."""
        text = words.view(np.uint32).copy()
        for t in self._stops:
            text[t // 32] &= ~np.uint32(1 << (t % 32))
        return bool(text.any())

    @property
    def num_accepted(self) -> int:
        return len(self._history)

    def find_jump_forward_string(self, max_bytes: int = 4096) -> str:
        """The longest string forced from here (one live byte at each step, not accepting),
        cut to whole UTF-8 characters."""
        if self._terminated:
            return ""
        dfa = self._dfa
        state = self._state
        out = bytearray()
        while len(out) < max_bytes and not dfa.accepting[state]:
            row = dfa.row(state)
            live = np.flatnonzero(row)
            if len(live) != 1:
                break
            out.append(int(live[0]))
            state = int(row[live[0]])
        return codecs.getincrementaldecoder("utf-8")(errors="strict").decode(bytes(out), final=False)
