"""Complexity scoring: how much model a request needs, 1 (trivial) to 5 (hard), with reasons.

The score means what ADR-006's router table means by it: 1-2 a small local model answers, 3 the 7B
local model, 4-5 the cloud (``routes.toml``). It is a sum of points for what the request visibly
holds, starting at 1 and clamped to 1..5; each point is named in ``reasons`` by what was counted,
never by the words that were matched (reasons are stored with the route, issue #21).

==========================  =========================================================
length (estimated tokens)   +1 from ``LENGTH_STEPS[0]``, +1 more at each further step
pasted material             +1 for a fenced block of ``BLOCK_LINES`` lines or more, or an
                            unfenced paste (a JSON payload, ``BLOCK_LINES`` log/code/diff
                            lines); +2 from ``LONG_BLOCK_LINES`` lines
components                  distinct services/components named (kebab-case names, alert
                            names, datastores and infrastructure such as Redis, Kafka,
                            資料庫): +1 from ``ENTITY_STEPS[0]`` without a correlation ask
correlation ask             asks to correlate, relate or find the root cause *across* two or
                            more components (根因, 關聯, 同一個問題, 同一件事, the same
                            incident, one incident or several, 共同原因, 誰是因誰是果):
                            at least 4, at least 5 from ``ENTITY_STEPS[1]`` components or
                            with an incident timeline (#28)
material to work on         "summarise this: ...", "幫我整理成三點：...": only the ask
                            before the colon (a blank line, an opening quote) is read
                            for asks, and the material's
                            services earn no point (the guide weighs a summary by the
                            material's length and the parts asked for)
analysis ask                root cause / timeline about one thing: +1
design ask                  compare with trade-offs and a recommendation (取捨, 建議, A 還是
                            B ... 推薦; not when declined: 不用給建議): +2
write-up for an audience    post-mortem, status page, report, release notes, 給主管: +1
several asks                a second question or "and what/when/how": +1
multi-step ask              +1 for one sequencing marker (first/then, 1. 2., 先…再, 然後),
                            +2 for three or more
conversation                +1 from ``HISTORY_TURNS`` user turns
tools                       +1 when the request carries tools
==========================  =========================================================

Token counts use :func:`aipool.tokens.estimate_tokens` over the whole text, so CJK text is weighed
per character; every other signal reads a long text's first and last few kilobytes
(:func:`aipool.routing.text.bounded`), so scoring a 100 KB paste costs what a few kilobytes do.
The weights were set on the corpus's train and dev splits, never on its test split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from aipool.contract.request import Request
from aipool.routing.text import (
    TextMemo,
    bounded,
    compile_folded,
    fold,
    literal_first,
    split_text,
)

MIN_SCORE = 1
MAX_SCORE = 5
#: Estimated-token thresholds; each one passed adds a point.
LENGTH_STEPS = (10, 400, 1500)
BLOCK_LINES = 4
LONG_BLOCK_LINES = 25
#: Distinct components for +1 (no correlation ask) and for 5 (with one).
ENTITY_STEPS = (3, 4)
HISTORY_TURNS = 3
#: Lines of an incident timeline ("09:02 ...") that make it one.
TIMELINE_LINES = 4


@dataclass(frozen=True)
class ComplexityScore:
    """A 1-5 score and the contributions that make it up."""

    score: int
    reasons: tuple[str, ...]
    #: The least the request can score whatever else is said of it: 4 (5) when it asks to
    #: correlate several services (four or more, or a timeline); 0 when nothing sets one.
    floor: int = 0


def _folded(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A case-insensitive ``pattern``, compiled to match :func:`~aipool.routing.text.fold`-ed
    text: about twice as fast as ``re.IGNORECASE`` on long texts."""
    return compile_folded(pattern, flags)


# Service-like kebab-case names ("ledger-db", "checkout-7d9f8b6c5-x2k4q"): a service suffix or a
# digit segment. Plain hyphenated English ("on-call", "one-paragraph") is not a component.
# Possessive runs (*+, ++): a run of letters and digits given back leaves one of them next, where
# neither "-" nor a word boundary can follow, so backtracking into it finds nothing (and cost a
# step per letter of every word).
_KEBAB = re.compile(r"\b[a-z][a-z0-9]*+(?:-[a-z0-9]++)+\b")
# A hyphenated word of the language, not a name: "on-call", "read-only", "real-time",
# "dead-letter", "x-request-id". Any other kebab-case word in a request is a name someone gave a
# service (``face-match``, ``pdf-export``): teams do not all end theirs in -api or -service.
_COMMON_HYPHENATED = re.compile(
    r"^(?:on|up|in|out|off|re|pre|non|multi|cross|self|well|co|ex|anti|semi|sub|e|x|t|so|all|"
    r"opt|sign|log|check|roll|set|follow|read|real|long|short|high|low|end|zero|third|first|"
    r"second|one|two|three|built|double|top|full|half|per|mid|post|rate|dead|round|health|key|"
    r"hot|back|blue|copy|stop|last|at|exactly|least|most|fail|cut|hand|time|run|day|week|"
    r"month|year|peer|point|state|side|open|closed|hard|soft|fine|user|human|cloud)-|"
    r"-(?:in|up|out|on|off|only|time|term|based|level|side|wide|free|safe|like|aware|driven|"
    r"friendly|specific|related|party|to|of|date|end|day|hoc|once|over|by|back|case|world|"
    r"write|wins|grained|native|hosted|facing|critical|sensitive|bound|heavy|intensive|call)$"
)
_SERVICE_SUFFIX = re.compile(
    r"-(?:api|service|svc|gateway|worker|web|db|cache|server|indexer|controller|proxy|exporter|"
    r"frontend|backend|nginx|app|check|events|engine|queue|store|manager|agent|cluster|replica|"
    r"primary|node|job|pool)$|-\d|-[a-z0-9]*\d[a-z0-9]*$"
)
_ALERT_NAME_PATTERN = (
    r"\b(?:Kube|Node|Etcd|CoreDNS|Postgres|Kafka|Redis|High|Target|CertManager|"
    r"Prometheus|Container|SLO|CPU)[A-Z][A-Za-z]+\b"
)
# Case-sensitive, and started with capitals once spread (text.literal_first): re skips every
# position but a capital, and prose has few.
_ALERT_NAME = re.compile(literal_first(_ALERT_NAME_PATTERN))
# Datastores and infrastructure named in prose, and "<name> service/job/..." ("the reconciliation
# job", "payments service"). Folded text; each match counts once by its own words.
_DATASTORES = (
    r"\b(?:redis|postgres(?:ql)?|mysql|kafka|rabbitmq|etcd|coredns|dns|cdn|ingress|nginx|"
    r"elasticsearch|object storage|s3|ceph|apiserver|kube-apiserver|load balancer|memcached|"
    r"zookeeper|vault|consul)\b"
)
_KINDS = ("service", "job", "worker", "cron", "queue", "cluster", "gateway")
_NAMED_KIND = (
    r"\b(?!(?:its|the|a|an|our|this|that|my|your|each|every|same) )[a-z]+ "
    rf"(?:{'|'.join(_KINDS)})\b"
)
_ZH_COMPONENTS = r"資料庫|快取|佇列|排程|對帳|登入|購物車|閘道|物件儲存|訊息佇列"
_COMPONENT = _folded(f"{_DATASTORES}|{_NAMED_KIND}|{_ZH_COMPONENTS}")
# A text with no kind word after a space has no "<name> service": the pattern without that
# alternative finds the same matches, and lets re skip ahead (text.literal_first).
_COMPONENT_UNNAMED = _folded(f"{_DATASTORES}|{_ZH_COMPONENTS}")
_KIND_AFTER_SPACE = tuple(f" {kind}" for kind in _KINDS)
# A stated count: "three services", "三個服務", "三者".
_COUNTED = ("services", "alerts", "pods", "regions", "nodes", "clusters", "systems", "components", "things")  # fmt: skip
# Every count states what it counts: a text with none of these words has no count to read.
_COUNT_WORDS = (*_COUNTED, "個", "者")
_STATED_COUNT = _folded(
    rf"\b(\d+|two|three|four|five|six|several|multiple)\s+(?:{'|'.join(_COUNTED)})\b|"
    r"(\d+|兩|二|三|四|五|六|多)\s*(?:個\s*(?:服務|告警|警報|alerts?|services?|jobs?|pod|node|region|叢集|系統)|者)"
)
_WORD_NUMBERS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "several": 3, "multiple": 3,
    "兩": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "多": 3,
}  # fmt: skip
# Asking for a root cause: across two or more components, a correlation ask (below).
_ROOT_CAUSE_ASK = r"root[\s-]*cause|\bRCA\b|根本原因|根因"
# Asks to relate several things, or to find what they share.
_CORRELATE = _folded(
    rf"{_ROOT_CAUSE_ASK}|correlat|\brelated\b|common cause|connect(?:s|ed)? (?:them|these)|"
    r"tie (?:these|them)|one incident or|causal|what broke first|which (?:one )?(?:broke|failed) "
    r"first|(?:the )?same (?:incident|issue|problem|outage|thing|cause|root)|"
    r"關聯|因果|同一(?:個)?(?:問題|原因|root|事件|件事|起)|串起來|哪個先|"
    r"有沒有關係|有關係嗎|"
    # Asked as a shared cause, a cause and its effect, or a choice of cause for all of them
    # (round 8's complex -> local: the guide's level 4 in words the pattern did not know).
    r"\bin common\b|common (?:factor|thread|denominator)|what do (?:they|these|both) (?:have|share)|"
    r"cause (?:or|and) effect|which (?:one )?is the cause|why (?:are|did|do|is) (?:both|all)\b|"
    r"共同(?:的)?(?:原因|點|根因|問題)|有什麼共同|誰是因|誰是果|是因還是果|互相影響|"
    r"為什麼(?:這)?(?:兩|三|幾)(?:個|邊|者)?都|問題還是|"
    # Symptoms that came together, or a cause asked of one component for another's symptom
    # (round 9's complex -> local: "為什麼這幾個服務一起重啟", "spikes exactly when the batch kicks
    # off ... is the batch starving the API?"); "do both use Redis?" asks about no symptom.
    r"(?:degrad|fail|down|slow|restart|error|broke|break|spik|crash)\w* (?:all )?at once|"
    r"at the same time|simultaneous|exactly when|cause or (?:a )?coincidence|"
    r"both (?:of them )?(?:started|spiked?|fail|degrad|slow|went|are (?:failing|slow|down|erroring))|"
    r"\bis (?:the )?[a-z0-9-]+(?: [a-z0-9-]+)? (?:causing|starving|slowing down|blocking|breaking)|"
    r"同時(?:發生|上升|變慢|出現|掛|壞|失敗|重啟|噴|飆|異常)|"
    r"一起(?:上升|升高|變慢|重啟|掛|壞|失敗|出錯|噴|飆|異常|fail|timeout)|"
    r"都(?:變多|變慢|上升|飆高|在.{0,12}(?:fail|失敗|掛|出錯|重啟))|之間(?:到底)?(?:是)?(?:哪裡|什麼)|"
    r"還是巧合|巧合嗎"
)
_ANALYSIS = _folded(r"timeline|時間線|時間軸")
# A write-up of one incident from given notes (the guide: 3, however many sections it asks for)
# that lists its sections: its "root cause" is a section to fill in, not an ask to find a cause
# across what the notes name ("find the root cause, then write the post-mortem" still is one).
_INCIDENT_WRITE_UP = _folded(
    r"post-?mortem|incident (?:report|review|write-?up)|檢討|復盤|事故報告"
)
_SECTIONS = _folded(
    r"timeline|impact|action items?|follow-?ups?|lessons learned|時間軸|時間線|影響|改善|後續|行動項目"
)
_ROOT_CAUSE = _folded(_ROOT_CAUSE_ASK)
# An ask to work on material given after it ("summarise this: ...", "幫我整理成三點：...", "write
# the post-mortem, notes below: ..."). The guide weighs such a request by the material's length and
# the parts asked for, so what the material itself says (its services, its steps, its causes) asks
# nothing of the pool: only the ask before the colon is read for asks (_material_head).
_MATERIAL_ASK = _folded(
    r"summar|tl;?\s?dr|condense|translat|rewrite|rephrase|turn (?:this|these|it) into|"
    r"release notes|changelog|status page|announcement|bullets?|key points|highlights|"
    r"post-?mortem|write-?up|shorten|handoff|hand-?over|"
    r"(?:weekly|monthly|status|exec|platform|team) (?:\w+ )?update|"
    r"重點|摘要|整理|濃縮|翻成|翻譯|改寫|條列|公告|通報|精簡|總結|縮短|檢討|復盤|報告|交接|週報|月報"
)
# Asking to find something in the material, not only to work on it ("找出根因：...").
_FIND = _folded(
    r"\bfind\b|identify|figure out|determine|analy[sz]|diagnos|找出|分析|判斷|釐清|查出|推測"
)
_MATERIAL_START = re.compile(r"[:：\"“「]")
#: The longest ask read as the head of material (characters), and the least material after it.
MATERIAL_HEAD_CHARS = 240
MATERIAL_CHARS = 60
# Concerns a review is asked to weigh; two or more make a review a bigger job.
_CONCERNS = (
    r"concurren|race|lock|migration|rollback|roll back|security|secret|error handling|"
    r"idempoten|transaction|retry|timeout|並行|競爭|鎖|回滾|安全|交易|重複消費|錯誤處理|重試"
)
_CONCERN = _folded(_CONCERNS)
_REVIEW = _folded(r"review|審查|審核|\bPR\b|pull request|\bdiff\b|patch")
# Lines of a paste (payload, logs) name the alert's own labels again: not more components.
_PAYLOAD_LINE = re.compile(r"(?m)^\s*[\"{}\[\]].*$")
# A write-up over a period (many incidents) rather than about one.
_PERIOD = _folded(
    r"last week|this week|weekly|monthly|quarter|this month|last month|of incidents|"
    r"\bQ[1-4]\b|(?:past|last) \d+ days|上週|本週|這週|這個月|上個月|本月|這季|本季|上一季|"
    r"週報|月報|季報|過去\s*\d+\s*天|近\s*\d+\s*天"
)
_DESIGN = _folded(
    r"\bor stay\b|\bor (?:move|switch|migrate|go with|keep|use|as an?)\b|"
    r"which (?:one|option) (?:would|should)|should (?:we|i) (?:use|go with|pick|choose)\b|"
    r"還是.{0,120}?(?:推薦|建議)|推薦哪|建議哪|選哪|用哪(?:個|一個)|"
    r"trade-?offs?|取捨|\bcompare\b|比較|\bvs\.?\b|pick between|選一個|which would you pick"
)
_RECOMMEND = _folded(r"recommend|justify|建議|推薦|what would change|會改變|pick\b|選")
# A comparison that declines a recommendation asks for none ("不用給建議", "no need to recommend").
_NO_RECOMMENDATION = _folded(
    r"(?:不用|不需要|不必|無須|毋須|別)(?:給|做|提供)?(?:任何)?(?:建議|推薦)|"
    r"(?:no need to|don't|do not|without|not asking (?:you )?to) (?:a )?recommend\w*(?: anything)?|"
    r"no recommendations?"
)
_WRITE_UP = _folded(
    r"post-?mortem|status page|release notes|changelog|for (?:management|leadership|the ticket|"
    r"customers)|customer-facing|action items|給主管|給客服|給管理層|給客戶|通報|週報|報告|"
    r"incident report|report for|(?:weekly|monthly) (?:\w+ )?(?:update|report|summary)|檢討|"
    r"trend|趨勢|"
    r"handoff|hand-?over|交接"
)
_SECOND_ASK = _folded(
    r"\band (?:what|when|how|why|where|whether)\b|並(?:說明|判斷|列出|給出|找出|提供)|"
    r"有哪些常見|\band the order\b|step by step|逐步"
)
_TIMELINE = re.compile(r"(?m)^\s*\d{1,2}:\d{2}\b")
# Matched against folded text (see _folded).
_STEP_MARKERS = (
    ("first … then", _folded(r"\bfirst\b.{0,300}?\b(?:then|and)\b", re.DOTALL)),
    ("then", _folded(r"\b(?:then|after that|afterwards|and finally|finally)\b")),
    ("numbered steps", re.compile(r"(?ms)^\s*1[.)]\s.*^\s*2[.)]\s")),
    ("one at a time", _folded(r"one at a time|逐一|一步一步")),
    ("先…再/然後", re.compile(r"先.{0,80}?(?:再|然後|接著)", re.DOTALL)),
    ("然後/接著/最後", re.compile(r"然後|接著|最後|之後再")),
)
# How a line of a log or a stack trace starts: a timestamp, a frame, a panic.
_TRACE_START = (
    r"\d{4}[-/]\d\d[-/]\d\d[T ]\d|at [\w.$]+\(|File \"|Traceback|goroutine \d|panic:|\[signal|"
    r"/\S+\.go:\d+"
)
# What unfenced pasted material looks like, line by line.
_PASTE_LINE = re.compile(
    rf"(?m)^\s*(?:{_TRACE_START}|\[?(?:ERROR|WARN|INFO|DEBUG)\b|[+-](?![+-])|@@|\w+:\s+\S|def |"
    r"func |import |Exception)"
)
# Lines of a log or a trace: the services and modules they name are the paste's, not the ask's
# (a bullet list of symptoms is the request's own words, and its components count).
_LOG_LINE = re.compile(
    rf"^\s*(?:{_TRACE_START}|\[?(?:ERROR|WARN|INFO|DEBUG|FATAL)\b|[\w.$]*(?:Exception|Error)\b|"
    r"Caused by)"
)


def _components(text: str, folded: str) -> set[str]:
    """Distinct services and components named in ``text`` (``folded`` is its folded copy)."""
    # A kebab-case name holds a hyphen: a text without one has none to look for.
    kebab = _KEBAB.findall(folded) if "-" in folded else []
    found = {m for m in kebab if _SERVICE_SUFFIX.search(m) or not _COMMON_HYPHENATED.search(m)}
    found.update(m.lower() for m in _ALERT_NAME.findall(text))
    named = any(kind in folded for kind in _KIND_AFTER_SPACE)
    for match in (_COMPONENT if named else _COMPONENT_UNNAMED).finditer(folded):
        word = match.group(0)
        # "checkout-api service" and "checkout-api" are one component.
        if not any(word.startswith(k.split("-")[0]) for k in found):
            found.add(word)
    return found


def _stated_count(folded: str) -> int:
    best = 0
    if not any(word in folded for word in _COUNT_WORDS):
        return best
    for m in _STATED_COUNT.finditer(folded):
        raw = m.group(1) or m.group(2) or ""
        best = max(best, int(raw) if raw.isdigit() else _WORD_NUMBERS.get(raw, 0))
    return best


def _unfenced_paste(prose: str) -> bool:
    """Whether the prose itself carries a paste: a JSON payload or several log/code/diff lines."""
    stripped = prose.lstrip()
    if stripped.startswith("{") or "\n{" in prose or '{"' in prose:
        return True
    # Counted up to the lines that make a paste: a long log need not be read to its end.
    lines = islice(_PASTE_LINE.finditer(prose), BLOCK_LINES - 1)
    return sum(1 for _line in lines) >= BLOCK_LINES - 1


def _concerns(folded: str) -> int:
    """How many distinct concerns (by their first four letters) ``folded`` names."""
    return len({m.group(0)[:4] for m in _CONCERN.finditer(folded)})


def _material_head(prose: str) -> str | None:
    """The ask of a request to work on material that follows it after a colon, an opening quote
    or a blank line (the first of them that ends such an ask: "分成：A、B、C" lists parts, and the
    notes follow the blank line), or None."""
    colon = _MATERIAL_START.search(prose)
    ends = sorted({colon.start() if colon else -1, prose.find("\n\n")} - {-1})
    for end in ends:
        if end > MATERIAL_HEAD_CHARS:
            break
        head, material = prose[:end], prose[end:].lstrip(" \t\n:：")
        if len(material) >= max(MATERIAL_CHARS, len(head)) and _MATERIAL_ASK.search(fold(head)):
            return head
    return None


def score(request: Request, memo: TextMemo | None = None) -> ComplexityScore:
    """Score ``request`` from 1 to 5; every point it earns is named in ``reasons`` (``memo``: the
    decision's, whose intent rules read the same window, split and prose)."""
    memo = memo if memo is not None else TextMemo()
    points = MIN_SCORE
    reasons: list[str] = []
    text = request.text()

    # The request's own estimate of its text: a hop has usually made it already (validation,
    # quota), and it reads the whole of a long text.
    tokens = request.estimated_text_tokens()
    steps = sum(1 for step in LENGTH_STEPS if tokens >= step)
    if steps:
        points += steps
        reasons.append(f"~{tokens} tokens (+{steps})")

    # Everything but the length reads a long text's head and tail only (text.bounded): a pasted
    # block's lines, components and asks all show there, and a long text earns its length points.
    text = memo(bounded, text)
    split = memo(split_text, text)
    lines = split.code_lines
    pasted = False
    if split.blocks and (
        lines >= BLOCK_LINES or any(b.lstrip().startswith("{") for b in split.blocks)
    ):
        # Only a long block of code is a bigger job: a long payload or log is read, not reviewed.
        long_code = lines >= LONG_BLOCK_LINES and split.looks_like_code()
        extra = 2 if long_code else 1
        points += extra
        pasted = True
        reasons.append(f"{len(split.blocks)} pasted block(s), {lines} lines (+{extra})")
    elif _unfenced_paste(split.prose):
        points += 1
        pasted = True
        reasons.append("pasted payload or log lines (+1)")

    asks = memo(bounded, request.last_user_text()) or text
    asks_prose = split.prose if asks == text else memo(split_text, asks).prose
    head = _material_head(asks_prose)
    folded_asks = memo(fold, head if head is not None else asks_prose)
    # A paste's lines (payload, logs, a trace) name what the paste is about again, or its
    # modules: the components are those the request's own sentences name.
    named = "\n".join(
        line
        for line in split.prose.splitlines()
        if not _LOG_LINE.match(line) and not (pasted and _PAYLOAD_LINE.match(line))
    )
    folded_all = fold(named)
    components = _components(named, folded_all)
    count = max(len(components), _stated_count(folded_all))
    # A post-mortem's "root cause" section asks nothing across components (_INCIDENT_WRITE_UP),
    # nor does the root cause of material to summarise ("幫我摘要 vendor 的 RCA") unless the ask
    # is to find one.
    sections = _INCIDENT_WRITE_UP.search(folded_asks) and _SECTIONS.search(folded_asks)
    summarised = head is not None and not _FIND.search(folded_asks)
    cue_asks = _ROOT_CAUSE.sub(" ", folded_asks) if sections or summarised else folded_asks
    # Searched once: the pattern is long, and the analysis ask below reads the same answer.
    relates = _CORRELATE.search(cue_asks) is not None
    correlate = count >= 2 and relates
    floor = 0
    if correlate:
        timeline = len(_TIMELINE.findall(asks_prose)) >= TIMELINE_LINES
        floor = 5 if count >= ENTITY_STEPS[1] or timeline else 4
        reasons.append(f"correlate {count} services/components (≥{floor})")
    elif count >= ENTITY_STEPS[0] and head is None:
        points += 1
        reasons.append(f"{count} services/components (+1)")

    write_up = _WRITE_UP.search(folded_asks) is not None
    if not correlate and not write_up and (relates or _ANALYSIS.search(cue_asks)):
        points += 1
        reasons.append("analysis ask (+1)")
    # The declined recommendation is looked for only where one was asked (a long pattern).
    if (
        _DESIGN.search(folded_asks)
        and _RECOMMEND.search(folded_asks)
        and _DESIGN.search(declined := _NO_RECOMMENDATION.sub(" ", folded_asks))
        and _RECOMMEND.search(declined)
    ):
        points += 2
        reasons.append("design comparison with a recommendation (+2)")
    if write_up:
        # A write-up of a paste is the paste's point already; of notes in prose, one more; and
        # one more again when it covers a period (a report over a week of incidents), pasted
        # items or not.
        period = _PERIOD.search(folded_asks) is not None
        extra = (0 if pasted else 1) + (1 if period else 0)
        if extra:
            points += extra
            over = " over a period" if period else ""
            reasons.append(f"write-up for an audience{over} (+{extra})")
    if _SECOND_ASK.search(folded_asks):
        points += 1
        reasons.append("several asks (+1)")

    # Concerns weigh on a review only: counted where one is asked (most requests ask none).
    if _REVIEW.search(folded_asks) and (concerns := _concerns(folded_asks)) >= 2:
        extra = 2 if concerns >= 3 else 1
        points += extra
        reasons.append(f"{concerns} concerns to weigh (+{extra})")

    markers = [name for name, pattern in _STEP_MARKERS if pattern.search(folded_asks)]
    if markers:
        extra = 2 if len(markers) >= 3 else 1
        points += extra
        reasons.append(f"multi-step ask ({', '.join(markers)}) (+{extra})")

    user_turns = sum(1 for m in request.messages if m.role == "user")
    if user_turns >= HISTORY_TURNS:
        points += 1
        reasons.append(f"{user_turns} user turns (+1)")

    if request.tools:
        points += 1
        reasons.append(f"{len(request.tools)} tool(s) (+1)")

    final = max(MIN_SCORE, floor, min(MAX_SCORE, points))
    if not reasons:
        reasons.append("short single ask")
    if final < points:
        reasons.append(f"capped at {final}")
    return ComplexityScore(score=final, reasons=tuple(reasons), floor=floor)
