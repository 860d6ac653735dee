"""Intent classification: what a request wants, decided by weighted keyword signals.

Deterministic and local: precompiled regular expressions with weights held as data (``SIGNALS``),
no model and no network, a few tens of microseconds per typical request. A long message is read by
its first and last few kilobytes (:func:`aipool.routing.text.bounded`): the ask sits around a paste,
and a 100 KB paste then costs what a few kilobytes do.

How a decision is made, in order:

1. A producer's explicit ``request.intent`` wins (confidence 1.0).
2. A request that carries tools is ``TOOL_CALL`` (confidence 1.0): only a tool-capable chain can
   answer it, whatever the text says.
3. Otherwise every signal that matches adds its weight to its intent. The last user message counts
   in full; the system prompt and earlier user turns count at ``CONTEXT_WEIGHT``.
   Signals come in two kinds:

   * *ask* signals name what the user wants done (``summarize``, ``review``, ``why``, ``restart
     the deployment``, ``幫我重啟``); they count in full.
   * *topic* signals only say what the text is about (``CrashLoopBackOff``, ``5xx``, ``告警``);
     their sum per intent is capped at ``TOPIC_CAP``, so a summary request that pastes an incident
     full of alert vocabulary stays a summary.

Rules that need more than a keyword, and why:

* ``TOOL_CALL`` needs an *imperative* operation: a mutating verb at the start of a clause or after a
  request marker (``please``, ``can you``, ``幫我``, ``請``, ``把 X ...``), or a mutating ``kubectl``
  command in the prose. A symptom (``一直重啟``, ``keeps restarting``, ``got rolled back``) is not an
  ask, and neither is a pasted command inside a code fence (that is something to review or read).
* A *diagnostic* question (why / 為什麼 / 原因 / what's causing) or an *advice* question (should I
  ...?) suppresses ``TOOL_CALL`` unless a request marker directly precedes the verb: "幫我看一下
  這個 pod 為什麼一直 CrashLoopBackOff" asks why, so it is ``ALERT_TRIAGE``; "payment-api 一直 OOM，
  幫我重啟它" asks to act, so it is ``TOOL_CALL``.
* A *how-to* question (how do I / 怎麼 / 如何 / 指令是什麼) is ``QUERY`` even when it names an
  operation: the user wants to learn the command, not to have it run.
* Read-only look-ups without tools (show / list / 查一下) are ``QUERY``; only mutating operations make
  ``TOOL_CALL``.
* Pasted source code or config with an ask to check it is ``CODE_REVIEW``; pasted logs or command
  output lean ``ALERT_TRIAGE`` (or ``SUMMARY`` when the ask is to summarise them).
* Nothing matched: ``CHAT`` with low confidence (small talk is what is left when nothing else is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from aipool.contract.request import Request
from aipool.routing.text import Presence, TextMemo, bounded, compile_folded, fold, split_text


class Intent(StrEnum):
    """What a request wants; the routing rules key on these names."""

    ALERT_TRIAGE = "ALERT_TRIAGE"
    QUERY = "QUERY"
    CODE_REVIEW = "CODE_REVIEW"
    SUMMARY = "SUMMARY"
    CHAT = "CHAT"
    TOOL_CALL = "TOOL_CALL"


#: Earlier turns and the system prompt say something about the conversation, but the last user
#: message says what is wanted now.
CONTEXT_WEIGHT = 0.3
#: The most topic vocabulary can add to one intent.
TOPIC_CAP = 2.5
ASK = "ask"
TOPIC = "topic"


@dataclass(frozen=True)
class IntentDecision:
    """The classifier's answer: the intent, how sure it is (0..1) and why."""

    intent: str
    confidence: float
    reasons: tuple[str, ...]


# Mutating operations, English and Traditional Chinese. Base verb forms only: "restarting",
# "restarted", "rolled back" describe what happened, they do not ask for anything.
_EN_OPS = (
    r"restart|redeploy|scale(?:\s+(?:up|down|out|in))?|roll\s?back|undo|delete|remove|drain|"
    r"cordon|uncordon|suspend|resume|bump|kill|evict|patch|turn\s+(?:off|on)|disable|enable|"
    r"pause|stop|shut\s+down|increase|decrease|reduce"
)
_ZH_OPS = (
    r"重啟|重新啟動|重開|擴容|縮容|擴展|回滾|回退|退版|刪除|刪掉|砍掉|停掉|關掉|關閉|打開|開啟|"
    r"暫停|恢復|執行|設成|設為|改成|調成|調到|拉到|升級|cordon|drain|uncordon|restart|scale|rollback"
)
_EN_MARKER = (
    r"please|pls|plz|kindly|can\s+you|could\s+you|would\s+you|go\s+ahead\s+and|now|then|and\s+then|"
    r"also|just"
)
_ZH_MARKER = r"幫我|幫忙|麻煩|請你?|給我|替我|先|再|然後|並且?|接著"
# Everything a request to act can be made of, in any position and any form the corpus has: the
# mutating operations above, the acts of the guide's TOOL_CALL (create, silence, acknowledge,
# page, post, run ...) and a go-ahead ("do it", "ok go", "好 執行", "繼續"). Deliberately wide:
# it is not a rule that finds an ask, only the floor under the model's TOOL_CALL (names_an_act).
_EN_ACTS = (
    rf"{_EN_OPS}|turn|shut|create|make|add|set|update|upgrade|downgrade|apply|deploy|rollout|"
    r"ship|release|publish|build|rebuild|run|rerun|re-run|retrigger|trigger|kick|execute|launch|"
    r"start|boot|reboot|silence|unsilence|mute|unmute|snooze|ack|acknowledge|expire|resolve|close|"
    r"reopen|open|file|page|call|notify|tell|ping|post|send|message|drop|flush|clear|purge|wipe|"
    r"truncate|vacuum|reindex|rotate|renew|regenerate|recreate|refresh|reload|reset|promote|demote|"
    r"move|shift|switch|swap|route|redirect|point|migrate|failover|fail|taint|label|annotate|tag|"
    r"mark|give|grant|revoke|allow|deny|block|unblock|ban|unban|allowlist|whitelist|blocklist|"
    r"take|back|backup|restore|snapshot|archive|freeze|unfreeze|lock|unlock|flip|toggle|spin|tear|"
    r"bring|merge|approve|approved|cancel|abort|retry|requeue|replay|assign|reassign|escalate|put|"
    r"change|edit|replace|rename|copy|clone|sync|import|export|upload|download|bounce|recycle|"
    r"cycle|extend|raise|lower|limit|throttle|cap|revert|attach|detach|mount|unmount|install|"
    r"uninstall|provision|deprovision|decommission|terminate|nuke|schedule|reschedule|book|pin|"
    r"unpin|invalidate|register|unregister|invite|subscribe|unsubscribe|issue|do|go|proceed|"
    r"continue|yes|yep|yeah|yup|ok|okay|sure|confirm|confirmed|lgtm"
)
_ZH_ACTS = (
    rf"{_ZH_OPS}|重起|重跑|重新|建|新增|加|移除|拿掉|清|靜音|消音|確認|認領|通知|叫|呼叫|發|貼|"
    r"指派|派|部署|上版|上線|下線|切|換|更新|跑|觸發|備份|還原|同步|凍結|解凍|鎖|封|解除|延長|輪替|"
    r"重設|取消|標|套|給|放|推|合併|載入|升|降|開|關|停|刪|砍|擴|縮|改|調|拉|設|退|移|搬|送|丟|收|"
    r"裝|卸|傳|寄|踢|掛|處理|安排|申請|核准|批准|照|做|吧|好|行|可以|沒問題|繼續"
)

#: ``(intent, kind, weight, label, pattern)``; ``pattern`` is matched case-insensitively.
SIGNALS: tuple[tuple[Intent, str, float, str, str], ...] = (
    # --- TOOL_CALL: imperative operations -------------------------------------------------------
    (
        Intent.TOOL_CALL,
        ASK,
        3.0,
        "imperative operation",
        rf"(?:^|[.!?;,:，。！？；：\n]\s*|\b(?:{_EN_MARKER})\s+)(?:{_EN_OPS})\b(?!\s+(?:is|was|does|do)\b)",
    ),
    (
        Intent.TOOL_CALL,
        ASK,
        3.0,
        "請/幫我 + operation",
        rf"(?:{_ZH_MARKER})\s*(?:一下\s*)?(?:把[^，。？?！!\n]{{0,40}}?)?(?:{_ZH_OPS})",
    ),
    (
        Intent.TOOL_CALL,
        ASK,
        3.0,
        "把 X + operation",
        rf"把[^，。？?！!\n]{{1,40}}?(?:{_ZH_OPS})",
    ),
    (
        Intent.TOOL_CALL,
        ASK,
        3.0,
        "operation verb first",
        rf"(?:^|[，。！？；\n])\s*(?:{_ZH_OPS})\s*(?:一下|掉)?\s*[\w\-]",
    ),
    (
        Intent.TOOL_CALL,
        ASK,
        3.0,
        "mutating kubectl command",
        r"\bkubectl\s+(?:rollout\s+(?:restart|undo|pause|resume)|scale|delete|drain|cordon|uncordon|"
        r"apply|patch|edit|set|annotate|label|taint|replace)\b",
    ),
    # --- ALERT_TRIAGE: diagnosis of something failing ---------------------------------------------
    (
        Intent.ALERT_TRIAGE,
        ASK,
        2.0,
        "asks why",
        r"\bwhy\b|為什麼|為何|怎麼會|怎麼回事|什麼原因|是什麼問題|哪裡出問題|原因|what(?:'s| is) "
        r"(?:going on|causing|wrong|happening)|what could cause|any idea|"
        r"是不是.{0,12}(?:問題|有關)|跟.{1,20}有關嗎",
    ),
    (
        Intent.ALERT_TRIAGE,
        ASK,
        2.0,
        "asks to diagnose",
        r"root\s*cause|根因|根本原因|排查|troubleshoot|diagnos|investigat|figure out|"
        r"how (?:bad|serious)|worry|擔心|誤報|false positive|要處理嗎|is .{1,30} down\b|"
        r"幫我看一下|幫我看看|看一下是|correlate|關聯|因果|what does this alert mean|"
        r"how do i verify|how to confirm|要從哪裡開始查|should i (?:roll\s?back|restart|wait|scale)",
    ),
    (
        Intent.ALERT_TRIAGE,
        TOPIC,
        1.5,
        "failure state",
        r"CrashLoopBackOff|OOMKilled|\bOOM\b|ImagePullBackOff|ErrImagePull|ContainerCreating|"
        r"\bPending\b|Evicted|NotReady|PLEG|DiskPressure|MemoryPressure|nil pointer|panic:|"
        r"Exception|too many clients|deadline exceeded|no leader|Back-off|flapping|一直重啟|"
        r"被重啟|keeps? (?:restarting|failing|crashing|getting)",
    ),
    (
        Intent.ALERT_TRIAGE,
        TOPIC,
        1.0,
        "alert or incident",
        r"告警|警報|\balerts?\b|\bfiring\b|PagerDuty|paged|\bincident\b|事故|\bP[12]\b|outage|"
        r"\bdown\b|掛了|異常|SLO burn|error budget|critical:",
    ),
    (
        Intent.ALERT_TRIAGE,
        TOPIC,
        1.0,
        "error symptom",
        r"error rate|\b5xx\b|\b50[234]\b|timeouts?\b|latency|延遲|飆|spik|\blag\b|evictions?|變慢|"
        r"很慢|變多|errors?\b|failing|fails?\b|failed|broken|stuck|卡住|上升",
    ),
    (
        Intent.ALERT_TRIAGE,
        TOPIC,
        1.0,
        "alert name",
        # Case matters here: alert names are CamelCase ("KubePodCrashLooping"), prose is not.
        r"(?-i:\b(?:Kube|Node|Etcd|CoreDNS|Postgres|Kafka|Redis|High|Target|CertManager|"
        r"Prometheus|Container)[A-Z]\w+)",
    ),
    # --- CODE_REVIEW ---------------------------------------------------------------------------
    (
        Intent.CODE_REVIEW,
        ASK,
        3.0,
        "asks for a review",
        r"\breview\b|code review|\blgtm\b|審查|審核|\bPR\s*#?\d*\b|pull request|/pull/\d+",
    ),
    (
        Intent.CODE_REVIEW,
        ASK,
        1.5,
        "asks to check it",
        r"有沒有問題|有什麼問題|有沒有 ?bug|可以改進|改進的地方|寫法|寫對了嗎|對嗎|正確嗎|合理嗎|"
        r"\bis (?:this|it) (?:ok|correct|right)|\bcorrect\?|any issues|problems? with|"
        r"check (?:this|for)|security problems|performance|效能問題|檢查這|concurrency bugs?",
    ),
    (
        Intent.CODE_REVIEW,
        TOPIC,
        1.0,
        "code words",
        r"\bdiff\b|\bregex\b|表示式|\bcode\b|程式碼|這段|snippet|manifest|Dockerfile|Terraform|"
        r"\bHelm template\b|\bfunction\b|\bSQL\b",
    ),
    # --- SUMMARY ---------------------------------------------------------------------------------
    (
        Intent.SUMMARY,
        ASK,
        3.0,
        "asks for a summary",
        r"summar(?:y|ize|ise)|tl;?dr|\brecap\b|摘要|總結|整理|condense|重點|"
        r"one-paragraph|三句話|一段話?|in \w+ sentences|release notes",
    ),
    (
        Intent.SUMMARY,
        ASK,
        2.0,
        "asks for a write-up",
        r"post-?mortem|寫成|status page|for management|給主管|給客服|通報|交接|hand-?off|"
        r"slack update|action items|meeting notes|寫一段|write (?:a|an|up)\b.{0,30}(?:summary|update|"
        r"report|notes)",
    ),
    # --- QUERY -----------------------------------------------------------------------------------
    (
        Intent.QUERY,
        ASK,
        2.0,
        "how-to or explain",
        r"how (?:do|can|should) (?:i|we|you)|how to\b|what(?:'s| is| are) (?:a|an|the)\b|"
        r"what does|difference|explain|compare|怎麼|如何|要怎麼|是什麼|什麼是|差在哪|差別|"
        r"指令|command\b|runbook|有哪些|when\b.{0,40}\?|哪個|哪裡",
    ),
    (
        Intent.QUERY,
        ASK,
        2.0,
        "look-up",
        r"^\s*(?:show|list|get|find|which|who(?! are you)|where)\b|show me|查一下|查詢|多少|幾個|"
        r"write (?:a|me a) (?:promql|logql|query)|寫一個 ?(?:PromQL|LogQL|query)|\bI need the\b|"
        r"\bper (?:endpoint|service)\b|網址|在哪",
    ),
    (Intent.QUERY, TOPIC, 1.0, "question", r"\?|？|請問|\bwhat\b|\bwhich\b|\bhow\b"),
    # --- CHAT ------------------------------------------------------------------------------------
    (
        Intent.CHAT,
        ASK,
        2.0,
        "greeting or thanks",
        r"^\s*(?:hi|hello|hey|yo|morning|good (?:morning|night|evening))\b|早安|午安|晚安|你好|"
        r"哈囉|在嗎|\bthanks?\b|thank you|\bthx\b|謝謝|感謝|了解|明天見|\bbrb\b",
    ),
    (
        Intent.CHAT,
        ASK,
        2.0,
        "small talk",
        r"\bjoke\b|笑話|poem|短詩|詩|\blol\b|haha|哈哈|好累|coffee|awesome|who are you|你是誰|"
        # Creative writing is asked in the imperative too ("make up a funny name"): not an operation.
        r"rhyme|haiku|limerick|\brap\b|饒舌|\bsong\b|a (?:short |bedtime )?story(?! points?)|funny name|"
        r"取個(?:名|綽號)|講個故事|"
        r"什麼 ?model|你覺得|\btips\b|something fun|^\s*(?:ok|okay|cool|nice|好喔|好的)\b",
    ),
)

# ASCII word boundaries: a CJK character next to an English word ("幫我restart") is a boundary.
# Patterns are case-insensitive as written; they run folded against folded text (text.fold), which
# reads about twice as fast as case-insensitive matching (text.compile_folded). A pattern with a case-sensitive group
# ("alert name") runs as written against the text as written.
_FLAGS = re.MULTILINE | re.ASCII


def _compile(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The compiled pattern and whether it matches folded text."""
    try:
        return compile_folded(pattern, _FLAGS), True
    except ValueError:
        return re.compile(pattern, _FLAGS | re.IGNORECASE), False


_COMPILED = tuple(
    (intent, kind, weight, label, *_compile(pattern))
    for intent, kind, weight, label, pattern in SIGNALS
)


# What _signals asks of each signal, in SIGNALS' order: whether it matches, not where
# (matched_words shows where, with _COMPILED's patterns), and whether on the folded text.
_PRESENT = tuple(
    (Presence.of(signal[4], _FLAGS) if on_folded else Presence(pattern.search), on_folded)
    for signal, (*_, pattern, on_folded) in zip(SIGNALS, _COMPILED, strict=True)
)

# Diagnostic, advice and how-to questions ask about an operation instead of for one.
_ABOUT_NOT_DO, _ = _compile(
    r"\bwhy\b|為什麼|為何|怎麼會|原因|\bshould (?:i|we)\b|要不要|該不該|how (?:do|can|should) "
    r"(?:i|we)|how to\b|怎麼|如何|指令是什麼|what(?:'s| is) the command|沒有用|doesn't work"
)
_MARKED_OP, _ = _compile(
    rf"(?:{_ZH_MARKER})\s*(?:一下\s*)?(?:把[^，。？?！!\n]{{0,40}}?)?(?:{_ZH_OPS})|"
    rf"\b(?:please|pls|can you|could you|go ahead and)\s+(?:{_EN_OPS})\b"
)
_ACT, _ = _compile(rf"\b(?:{_EN_ACTS})\b|{_ZH_ACTS}")
# Blocks of source or config are evidence for a review; blocks of logs for a diagnosis.
_CODE_BLOCK_WEIGHT = 2.0
_LOG_BLOCK_WEIGHT = 1.0

#: Order used to break exact ties, most specific first.
_TIE_ORDER = (
    Intent.TOOL_CALL,
    Intent.CODE_REVIEW,
    Intent.SUMMARY,
    Intent.ALERT_TRIAGE,
    Intent.QUERY,
    Intent.CHAT,
)


def _signals(prose: str) -> tuple[tuple[bool, ...], bool]:
    """Whether each keyword signal of ``_COMPILED`` matches ``prose``, in order, and whether
    ``prose`` asks why/how/whether about an operation rather than for one (``prose`` folded
    once for both)."""
    folded = fold(prose)
    found = tuple(present(folded if on_folded else prose) for present, on_folded in _PRESENT)
    about = _ABOUT_NOT_DO.search(folded) is not None and _MARKED_OP.search(folded) is None
    return found, about


def _score_text(
    text: str, factor: float, total: dict[Intent, float], why: list[str], memo: TextMemo
) -> None:
    """Add ``text``'s signals, times ``factor``, to ``total``; explain them in ``why`` at full weight."""
    scores = dict.fromkeys(Intent, 0.0)
    topic = dict.fromkeys(Intent, 0.0)
    split = memo(split_text, memo(bounded, text))
    prose = split.prose
    found_each, about_not_do = memo(_signals, prose)
    for (intent, kind, weight, label, _pattern, _on_folded), found in zip(
        _COMPILED, found_each, strict=True
    ):
        if not found:
            continue
        if kind == TOPIC:
            room = max(0.0, TOPIC_CAP - topic[intent])
            added = min(weight, room)
            topic[intent] += added
        else:
            added = weight
        if added:
            scores[intent] += added * factor
            if factor == 1.0:
                # The label only, never the matched text: reasons are stored with the route (#21).
                why.append(f"{intent}: {label}")
    if split.blocks:
        if split.looks_like_code():
            scores[Intent.CODE_REVIEW] += _CODE_BLOCK_WEIGHT * factor
            if factor == 1.0:
                why.append(f"{Intent.CODE_REVIEW}: fenced code block")
        elif split.looks_like_logs():
            scores[Intent.ALERT_TRIAGE] += _LOG_BLOCK_WEIGHT * factor
            if factor == 1.0:
                why.append(f"{Intent.ALERT_TRIAGE}: pasted logs/output")
    if scores[Intent.TOOL_CALL] and about_not_do:
        # "why does it keep restarting", "how do I scale": about an operation, not a request for one.
        scores[Intent.TOOL_CALL] = 0.0
        if factor == 1.0:
            why.append("TOOL_CALL dropped: asks why/how/whether, not to act")
    for intent, value in scores.items():
        total[intent] += value


def signal_labels(prose: str, memo: TextMemo | None = None) -> list[str]:
    """The labels of the keyword signals that match ``prose`` (features for the intent model),
    and ``about not do`` when the text asks why/how/whether about an operation (``memo``: the
    decision's, whose rules read the same prose when the message is short)."""
    memo = memo if memo is not None else TextMemo()
    found_each, about_not_do = memo(_signals, prose)
    labels = [signal[3] for signal, found in zip(_COMPILED, found_each, strict=True) if found]
    if about_not_do:
        labels.append("about not do")
    return labels


def names_an_act(prose: str, memo: TextMemo | None = None) -> bool:
    """Whether ``prose`` holds a word a request to act is made of (an operation, an act such as
    silence or page, or a go-ahead), in any position or language.

    The floor under a ``TOOL_CALL`` decision (:func:`aipool.routing.router.choose_intent`): the
    tool chain ends in a refusal, and a text with none of these words asks nothing of it, however
    short, long, English or Chinese it is (issue #40: a plain sentence reached it on its length
    and script). Wide on purpose: whether such a word makes an ask is the model's to weigh."""
    return _ACT.search(memo(fold, prose) if memo is not None else fold(prose)) is not None


def matched_words(text: str) -> list[tuple[str, str, str]]:
    """``(intent, label, matched words)`` for each keyword signal in ``text``: for a person at a
    terminal (``aipool route``) only. Never store the third element: it is prompt text."""
    prose = split_text(bounded(text)).prose
    folded = fold(prose)
    found = []
    for intent, _kind, _weight, label, pattern, on_folded in _COMPILED:
        match = pattern.search(folded if on_folded else prose)
        if match is not None:
            words = prose[match.start() : match.end()].strip(" \t\n.,;:!?，。！？；：")[:40]
            found.append((intent.value, label, words))
    return found


def classify(request: Request, memo: TextMemo | None = None) -> IntentDecision:
    """Decide the intent of ``request``; same request, same answer (``memo``: the decision's, when
    the router has read the same texts already)."""
    if request.intent:
        return IntentDecision(
            intent=request.intent.upper(),
            confidence=1.0,
            reasons=(f"explicit intent {request.intent.upper()} from the producer",),
        )
    if request.tools:
        return IntentDecision(
            intent=Intent.TOOL_CALL.value,
            confidence=1.0,
            reasons=(f"request carries {len(request.tools)} tool(s)",),
        )
    return classify_text(request.last_user_text(), context=_context(request), memo=memo)


def _context(request: Request) -> str:
    user_turns = [m.content for m in request.messages if m.role == "user"]
    earlier = user_turns[:-1] if user_turns else []
    return "\n".join([request.system, *earlier]) if request.system or earlier else ""


def classify_text(text: str, *, context: str = "", memo: TextMemo | None = None) -> IntentDecision:
    """Classify a user message, with ``context`` (system prompt, earlier turns) as a weaker signal."""
    memo = memo if memo is not None else TextMemo()
    scores = dict.fromkeys(Intent, 0.0)
    why: list[str] = []
    _score_text(text, 1.0, scores, why, memo)
    if context:
        _score_text(context, CONTEXT_WEIGHT, scores, why, memo)
    ranked = sorted(Intent, key=lambda i: (-scores[i], _TIE_ORDER.index(i)))
    best, second = ranked[0], ranked[1]
    if scores[best] <= 0:
        return IntentDecision(
            intent=Intent.CHAT.value, confidence=0.3, reasons=("no signal: defaults to CHAT",)
        )
    # The margin over the runner-up, squashed into 0..1: a lone signal is fairly sure, a near tie
    # is not.
    top, runner = scores[best], scores[second]
    confidence = round(min(0.99, 0.5 + 0.5 * (top - runner) / (top + 1.0)), 2)
    reasons = tuple(r.split(": ", 1)[1] for r in why if r.startswith(f"{best}: ")) or (
        f"{best} scored {top:.1f}",
    )
    dropped = tuple(r for r in why if r.startswith("TOOL_CALL dropped"))
    return IntentDecision(intent=best.value, confidence=confidence, reasons=reasons + dropped)
