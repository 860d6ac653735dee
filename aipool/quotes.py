"""Provider text never carries the prompt back into what the pool stores.

A provider's error may quote the request it refused (an Ollama server echoing the body it could
not parse, a proxy's 400 repeating the message). That text becomes the attempt's ``error``, which
is stored in the result, the ledger row and the hop's log line, where no prompt text may be.
:func:`without_quotes` cuts every run of it that also appears in the prompt, character for
character, over at least :data:`QUOTE_WINDOW` characters.
"""

from __future__ import annotations

#: The shortest run counted as a quote: long enough that ordinary error words ("not found",
#: "invalid request") rarely match by chance, short enough to catch a national id (10
#: characters) or a name with its number.
QUOTE_WINDOW = 10
#: What a cut run is shown as.
QUOTED = "[prompt text]"


def without_quotes(text: str, prompt: str, window: int = QUOTE_WINDOW) -> str:
    """``text`` with every run of ``window`` or more characters found in ``prompt`` replaced by
    :data:`QUOTED`. Linear in both lengths: runs only where a provider's text is kept."""
    if len(text) < window or len(prompt) < window:
        return text
    pieces = {text[i : i + window] for i in range(len(text) - window + 1)}
    quoted = {
        piece
        for piece in (prompt[i : i + window] for i in range(len(prompt) - window + 1))
        if piece in pieces
    }
    if not quoted:
        return text
    covered = [False] * len(text)
    for i in range(len(text) - window + 1):
        if text[i : i + window] in quoted:
            covered[i : i + window] = [True] * window
    kept: list[str] = []
    for i, char in enumerate(text):
        if not covered[i]:
            kept.append(char)
        elif i == 0 or not covered[i - 1]:
            kept.append(QUOTED)
    return "".join(kept)
