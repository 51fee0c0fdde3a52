"""Write tests/data/flag_streams.jsonl: labelled, agent-like memory streams for contradiction flags.

    .venv/bin/python -m scripts.flag_streams          # writes the file (deterministic: a fixed seed)

Each stream is what one agent writes into one namespace over a few weeks, in time order: facts about
people, a codebase or operations, told and re-told in other words; the agent's own event log
("Looked up flights to Lisbon.", "Reviewed PR #512."); identifiers that name a subject ("Contact
number 55", "INC-2211", "ticket ATL-301"); lists that grow ("likes hiking", "likes chess");
qualified values ("... for enterprise customers"); and real changes of a single-valued attribute.

Every fact memory carries its reading (`fact`: subject, attribute, value, and whether the attribute
holds many values at once); the gold contradictions are derived from those, never written by hand:
two memories of one stream contradict when they state the same single-valued attribute of the same
subject with different values (A -> B -> C gives three pairs). An event, a list item or a qualified
value never does. Paraphrases of one value are not contradictions.

One line per stream: {"stream", "kind", "memories": [{"id", "day", "text", "fact"}], "contradictions":
[[older_id, newer_id], ...]}. It also writes tests/data/flag_longmemeval.jsonl: real updates from the
knowledge-update questions of LongMemEval (../shared/data/longmemeval), the clause of the oldest and
of the newest evidence turn that holds the old and the new value. The split by stream into tuning and test halves is
tests/data/flag_streams_split.json, written before any rule was tuned.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from scripts import REPO

OUT = REPO / "tests" / "data" / "flag_streams.jsonl"
SEED = 41

FIRST = "Dana Sam Priya Tom Maya Leo Omar Jordan Emma Noah Aisha Lucas Ines Marco Yuki Sofia Ravi Clara Ben Hana".split()
LAST = "Raman Becker Okafor Lindqvist Moreau Tanaka Silva Novak Haddad Kowalski Brennan Ferreira Ito Castillo Weber".split()
CITIES = "Vienna Berlin Lisbon Porto Seville Madrid Oslo Dublin Prague Krakow Lyon Ghent Turin Bilbao Tallinn Riga".split()
COMPANIES = "Northwind Globex Initech Contoso Umbrella Hooli Stark Wayne Acme Vandelay Soylent Tyrell".split()
HOBBIES = "hiking chess climbing pottery sailing baking running cycling photography gardening jazz piano".split()
LANGS = "Spanish Japanese German Portuguese Italian Korean Dutch Polish Arabic French".split()
SERVICES = "billing search auth payments notifications ingest reporting gateway checkout scheduler".split()
TEAMS = "platform payments growth data infra mobile frontend security".split()
DEPS = "requests numpy sqlalchemy pydantic fastapi celery redis-py boto3 httpx alembic".split()
KEYS = "ATL OPS WEB API DATA INFRA MOB".split()


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


class Stream:
    def __init__(self, name: str, kind: str, rng: random.Random):
        self.name, self.kind, self.rng = name, kind, rng
        self.memories: list[dict[str, Any]] = []
        self.day = 0

    def add(self, text: str, fact: tuple[str, str, str, bool] | None = None) -> None:
        self.day += self.rng.choice((0, 0, 1, 1, 2))
        memory = {"id": f"{self.name}-{len(self.memories) + 1:03d}", "day": self.day, "text": text,
                  "fact": list(fact) if fact else None}  # fmt: skip
        self.memories.append(memory)

    def shuffle_in(self, groups: list[list[tuple[str, tuple | None]]]) -> None:
        """Interleave several ordered groups of memories at random, each group keeping its order."""
        cursors = [0] * len(groups)
        while any(c < len(g) for c, g in zip(cursors, groups)):
            i = self.rng.choice([i for i, g in enumerate(groups) if cursors[i] < len(g)])
            text, fact = groups[i][cursors[i]]
            cursors[i] += 1
            self.add(text, fact)

    def gold(self) -> list[list[str]]:
        pairs = []
        for n, a in enumerate(self.memories):
            for b in self.memories[n + 1 :]:
                fa, fb = a["fact"], b["fact"]
                if fa and fb and fa[:2] == fb[:2] and not fa[3] and not fb[3] and fa[2] != fb[2]:
                    pairs.append([a["id"], b["id"]])
        return pairs


# -- people ----------------------------------------------------------------------------------------


def people_stream(stream: Stream) -> None:
    rng = stream.rng
    groups: list[list[tuple[str, tuple | None]]] = []
    names = rng.sample(FIRST, 4)
    for who in names:
        g: list[tuple[str, tuple | None]] = []
        manager, new_manager = person(rng), person(rng)
        g.append((rng.choice([f"{who}'s manager is {manager}.", f"{who} reports to {manager}."]), (who, "manager", manager, False)))
        if rng.random() < 0.5:
            g.append((f"{manager} is {who}'s manager.", (who, "manager", manager, False)))
        city, city2 = rng.sample(CITIES, 2)
        g.append((rng.choice([f"{who} lives in {city}.", f"{who} is based in {city}."]), (who, "city", city, False)))
        day, month = rng.randint(1, 28), rng.choice("January March May June August October December".split())
        g.append((rng.choice([f"{who}'s birthday is on {day} {month}.", f"{who} was born on {day} {month}."]), (who, "birthday", f"{day} {month}", False)))
        g.append((f"{who}'s phone number ends in {rng.randint(1000, 9999)}.", (who, "phone", "x", False)))
        hobbies = rng.sample(HOBBIES, 3)
        for hobby in hobbies:
            g.append((rng.choice([f"{who} likes {hobby}.", f"{who} enjoys {hobby}.", f"{who} is into {hobby}."]), (who, "hobby", hobby, True)))
        lang = rng.sample(LANGS, 2)
        g.append((f"{who} speaks {lang[0]}.", (who, "language", lang[0], True)))
        g.append((f"{who} is learning {lang[1]}.", (who, "learning", lang[1], True)))
        company = rng.choice(COMPANIES)
        g.append((rng.choice([f"{who} works at {company}.", f"{who} is an engineer at {company}."]), (who, "employer", company, False)))
        if rng.random() < 0.6:
            g.append((f"{who} takes their coffee black, no sugar.", (who, "coffee", "black", False)))
            if rng.random() < 0.6:
                g.append((rng.choice([f"{who} now takes two sugars in their coffee.", f"{who} switched to oat milk in their coffee."]), (who, "coffee", "changed", False)))
        # Events about this person: both true.
        for _ in range(rng.randint(2, 4)):
            g.append((rng.choice([
                f"Sent {who} a reminder about the dentist appointment.",
                f"Drafted a reply to {who} about the invoice.",
                f"Booked a table at {rng.choice(['Casa Lola', 'Nori', 'The Anchor', 'Bistro 21'])} for {who}'s birthday.",
                f"Asked {who} about the weekend plans.",
                f"Called {who} to confirm the meeting.",
                f"Forwarded {who} the slides from {rng.choice(['Monday', 'Tuesday', 'Thursday'])}.",
            ]), None))
        # Changes, some with a time marker, some said in other words.
        if rng.random() < 0.7:
            g.append((rng.choice([
                f"{who}'s manager is {new_manager} since the reorg.",
                f"{who} now reports to {new_manager}.",
                f"{who}'s new manager is {new_manager}.",
            ]), (who, "manager", new_manager, False)))
        if rng.random() < 0.6:
            g.append((rng.choice([f"{who} moved to {city2}.", f"{who} now lives in {city2}.", f"{who} lives in {city2} now."]), (who, "city", city2, False)))
        if rng.random() < 0.3:
            company2 = rng.choice([c for c in COMPANIES if c != company])
            g.append((f"{who} left {company} and now works at {company2}.", (who, "employer", company2, False)))
        groups.append(g)
    events = [(rng.choice([
        f"Looked up flights to {c}.", f"Checked the weather in {c}.", f"Searched for hotels in {c}.",
        f"Asked about train times to {c}.",
    ]), None) for c in rng.sample(CITIES, 6)]
    groups.append(events)
    stream.shuffle_in(groups)


# -- projects --------------------------------------------------------------------------------------


def project_stream(stream: Stream) -> None:
    rng = stream.rng
    groups: list[list[tuple[str, tuple | None]]] = []
    service = rng.choice(SERVICES)
    limit, limit2 = rng.choice([(100, 500), (60, 120), (1000, 2000), (50, 200)])
    groups.append([
        (f"The {service} API rate limit is {limit} requests per minute.", ("api", "rate limit", str(limit), False)),
        (f"The {service} API rate limit is {limit * 10} requests per minute for enterprise customers.", ("api", "rate limit enterprise", str(limit * 10), False)),
        (rng.choice([f"The {service} API rate limit is now {limit2} requests per minute.", f"Raised the {service} API rate limit to {limit2} requests per minute."]),
         ("api", "rate limit", str(limit2), False)),
    ])  # fmt: skip
    py, py2 = rng.choice([("3.10", "3.11"), ("3.11", "3.12"), ("3.9", "3.11")])
    groups.append([
        (f"The {service} service runs on Python {py}.", ("svc", "python", py, False)),
        (f"The {service} service is on Python {py}.", ("svc", "python", py, False)),
        (f"The {service} service runs on Python {py2} since the upgrade.", ("svc", "python", py2, False)),
    ])
    owner, owner2 = rng.sample(TEAMS, 2)
    groups.append([
        (f"The {service} service is owned by the {owner} team.", ("svc", "owner", owner, False)),
        (f"The {owner2} team owns the {service} service now.", ("svc", "owner", owner2, False)),
    ] if rng.random() < 0.7 else [(f"The {service} service is owned by the {owner} team.", ("svc", "owner", owner, False))])
    ci = rng.sample(["GitHub Actions", "CircleCI", "Buildkite", "GitLab CI"], 2)
    groups.append([(f"CI runs on {ci[0]}.", ("repo", "ci", ci[0], False)), (f"CI moved to {ci[1]}.", ("repo", "ci", ci[1], False))])
    groups.append([(f"The default branch is {rng.choice(['main', 'trunk'])}.", ("repo", "branch", "x", False))])
    timeout, timeout2 = rng.choice([(30, 60), (15, 45), (10, 20)])
    groups.append([
        (f"The request timeout for {service} is {timeout} seconds.", ("svc", "timeout", str(timeout), False)),
        (f"The {service} request timeout is {timeout} seconds.", ("svc", "timeout", str(timeout), False)),
        (f"The {service} request timeout was raised to {timeout2} seconds.", ("svc", "timeout", str(timeout2), False)),
    ])
    # Identifiers: each PR and ticket is a subject of its own.
    prs = rng.sample(range(300, 900), 5)
    pr_group = []
    for pr in prs:
        pr_group.append((rng.choice([f"Reviewed PR #{pr}.", f"Merged PR #{pr}.", f"Left comments on PR #{pr}."]), None))
        pr_group.append((f"PR #{pr} {rng.choice(['adds retries to the webhook client', 'fixes the flaky login test', 'removes the legacy export', 'bumps the ORM', 'adds a dark mode toggle'])}.", (f"pr{pr}", "content", str(pr), True)))
    groups.append(pr_group)
    key = rng.choice(KEYS)
    tickets = rng.sample(range(100, 999), 4)
    ticket_group = []
    assignees = {}
    for t in tickets:
        who = rng.choice(FIRST)
        assignees[t] = who
        ticket_group.append((rng.choice([f"Ticket {key}-{t} is assigned to {who}.", f"{key}-{t} is assigned to {who}."]), (f"{key}-{t}", "assignee", who, False)))
        ticket_group.append((f"Ticket {key}-{t} is {rng.choice(['blocked on the schema change', 'waiting for review', 'in progress'])}.", (f"{key}-{t}", "status", "x", False)))
    t = tickets[0]
    other = rng.choice([n for n in FIRST if n != assignees[t]])
    ticket_group.append((f"Ticket {key}-{t} is now assigned to {other}.", (f"{key}-{t}", "assignee", other, False)))
    groups.append(ticket_group)
    bumps = [(f"Bumped {dep} to the latest version.", None) for dep in rng.sample(DEPS, 4)]
    bumps += [(f"Bumped dependency {rng.randint(100, 500)} to latest.", None) for _ in range(2)]
    bumps += [(f"Fixed the flaky test in tests/test_{rng.choice(SERVICES)}.py.", None), (f"Ran the migrations on staging for {service}.", None)]
    rng.shuffle(bumps)
    groups.append(bumps)
    stack = rng.sample(["Redis", "Kafka", "PostgreSQL", "Celery", "Elasticsearch", "S3"], 3)
    groups.append([(f"The {service} service uses {tool}.", ("svc", f"uses {tool}", tool, True)) for tool in stack])
    stream.shuffle_in(groups)


# -- operations ------------------------------------------------------------------------------------


def operations_stream(stream: Stream) -> None:
    rng = stream.rng
    groups: list[list[tuple[str, tuple | None]]] = []
    oncall = rng.sample(FIRST, 3)
    groups.append([(rng.choice([f"The on-call engineer this week is {n}.", f"{n} is on call this week."]), ("ops", "oncall", n, False)) for n in oncall])
    region, region2 = rng.sample(["eu-west-1", "us-east-1", "eu-central-1", "ap-southeast-2"], 2)
    groups.append([
        (f"The primary region is {region}.", ("ops", "region", region, False)),
        (f"Failed over: the primary region is now {region2}.", ("ops", "region", region2, False)),
    ])
    hour, hour2 = rng.sample([1, 2, 3, 4, 5], 2)
    groups.append([
        (f"Backups run at {hour}:00 UTC.", ("ops", "backup time", str(hour), False)),
        (f"Nightly backups run at {hour}:00 UTC.", ("ops", "backup time", str(hour), False)),
        (f"Backups now run at {hour2}:00 UTC.", ("ops", "backup time", str(hour2), False)),
    ])
    disk, disk2 = rng.choice([(80, 90), (75, 85), (85, 95)])
    groups.append([
        (f"The disk usage alert fires at {disk}%.", ("ops", "disk alert", str(disk), False)),
        (f"The disk usage alert threshold was changed to {disk2}%.", ("ops", "disk alert", str(disk2), False)),
    ])
    incidents = rng.sample(range(1000, 3000), 4)
    inc_group = []
    for n, inc in enumerate(incidents):
        sev = rng.choice(["SEV1", "SEV2"] if n == 0 else ["SEV1", "SEV2", "SEV3"])
        inc_group.append((f"INC-{inc} is a {sev}.", (f"INC-{inc}", "severity", sev, False)))
        inc_group.append((f"INC-{inc} was caused by {rng.choice(['an expired certificate', 'a full disk on db-2', 'a bad deploy', 'a DNS misconfiguration'])}.", (f"INC-{inc}", "cause", "x", False)))
        inc_group.append((rng.choice([f"Paged {rng.choice(FIRST)} about INC-{inc}.", f"Opened INC-{inc} for the checkout errors.", f"Posted an update on INC-{inc}."]), None))
    inc = incidents[0]
    inc_group.append((f"INC-{inc} was downgraded to SEV3.", (f"INC-{inc}", "severity", "SEV3", False)))
    groups.append(inc_group)
    hosts = [f"{rng.choice(['db', 'web', 'cache', 'worker'])}-{i}" for i in rng.sample(range(1, 12), 4)]
    groups.append([(rng.choice([f"Restarted {h}.", f"Rotated the logs on {h}.", f"Drained {h} for maintenance.", f"Patched the kernel on {h}."]), None) for h in hosts])
    groups.append([(f"Host {h} has {rng.choice([16, 32, 64])} GB of RAM.", (h, "ram", "x", False)) for h in hosts[:3]])
    grafana = rng.sample(["Grafana", "Datadog", "New Relic"], 2)
    groups.append([(f"Dashboards live in {grafana[0]}.", ("ops", "dashboards", grafana[0], False)), (f"Dashboards moved to {grafana[1]}.", ("ops", "dashboards", grafana[1], False))])
    groups.append([(f"The status page is updated by {rng.choice(FIRST)}.", ("ops", "status page owner", "x", False))])
    groups.append([(f"Deployed {rng.choice(SERVICES)} v{rng.randint(1, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)} to production.", None) for _ in range(4)])
    stream.shuffle_in(groups)


# -- contacts --------------------------------------------------------------------------------------


def contacts_stream(stream: Stream) -> None:
    rng = stream.rng
    numbers = rng.sample(range(1, 200), rng.randint(10, 16))
    style = rng.choice(["number", "hash", "name"])
    first_pass, second_pass = [], []
    for n in numbers:
        city, city2 = rng.sample(CITIES, 2)
        label = {"number": f"Contact number {n}", "hash": f"Customer #{n}", "name": f"Lead {n} ({rng.choice(FIRST)} {rng.choice(LAST)})"}[style]
        first_pass.append((f"{label} lives in {city}.", (f"c{n}", "city", city, False)))
        if rng.random() < 0.8:
            second_pass.append((rng.choice([f"{label} lives in {city2}.", f"{label} moved to {city2}.", f"{label} now lives in {city2}."]), (f"c{n}", "city", city2, False)))
        if rng.random() < 0.4:
            first_pass.append((f"{label} works at {rng.choice(COMPANIES)}.", (f"c{n}", "employer", "x", False)))
    rng.shuffle(second_pass)
    for text, fact in first_pass + second_pass:
        stream.add(text, fact)


MAKERS = {"people": people_stream, "projects": project_stream, "operations": operations_stream, "contacts": contacts_stream}
PER_KIND = 8


def streams() -> list[dict[str, Any]]:
    out = []
    for kind, maker in MAKERS.items():
        for i in range(1, PER_KIND + 1):
            name = f"{kind}-{i:02d}"
            stream = Stream(name, kind, random.Random(f"{SEED}-{name}"))
            maker(stream)
            out.append({"stream": name, "kind": kind, "memories": stream.memories, "contradictions": stream.gold()})
    return out


def main() -> int:
    data = streams()
    with open(OUT, "w", encoding="utf-8") as f:
        for stream in data:
            f.write(json.dumps(stream, ensure_ascii=False) + "\n")
    memories = sum(len(s["memories"]) for s in data)
    gold = sum(len(s["contradictions"]) for s in data)
    print(f"wrote {OUT.relative_to(REPO)}: {len(data)} streams, {memories} memories, {gold} contradicting pairs")
    updates = longmemeval_updates()
    with open(LONGMEMEVAL_OUT, "w", encoding="utf-8") as f:
        for update in updates:
            f.write(json.dumps(update, ensure_ascii=False) + "\n")
    print(f"wrote {LONGMEMEVAL_OUT.relative_to(REPO)}: {len(updates)} knowledge updates of LongMemEval")
    return 0



# -- LongMemEval's knowledge updates --------------------------------------------------------------

LONGMEMEVAL_OUT = REPO / "tests" / "data" / "flag_longmemeval.jsonl"
# For each knowledge-update question: the clause of its oldest and of its newest evidence turn that
# holds the old and the new value, copied verbatim (chosen by hand: the answer's clause; questions
# whose turns hold no clause stating the changed value, or one split over several, are left out).
LONGMEMEVAL_CLAUSES = {
    "07741c44": ("I've been keeping them under my bed for storage", "I'm looking forward to get rid of some of my old sneakers in a shoe rack in it"),
    "08e075c7": ("I've been using my Fitbit Charge 3 for 6 months now", "I've been using my Fitbit Charge 3 for 9 months now"),
    "0e4e4c46": ("my highest score so far is 124 points", "I just got my highest score in Ticket to Ride - 132 points!"),
    "10e09553": ("I caught 7 largemouth bass on my trip to Lake Michigan with Alex on 7/10", "when I was there with Alex on 7/22 - we caught 9 largemouth bass that day."),
    "184da446": ("I've been reading \"A Short History of Nearly Everything\" and I'm currently on page 200", "in \"A Short History of Nearly Everything\" - I'm now on page 220"),
    "18bc8abd": ("I need to stock up on my favorite BBQ sauce, Sweet Baby Ray's", "I'm currently obsessed with Kansas City Masterpiece BBQ sauce on my ribs."),
    "26bdc477": ("including three trips to Yellowstone, Yosemite, and the Grand Canyon", "I've had my Canon EOS 80D with me on five trips now"),
    "42ec0761": ("I realized I misplaced the small screwdriver I use for that.", "I actually have a spare screwdriver that I picked up when I organized my computer desk a while back"),
    "45dc21b6": ("I've been loving Emma's recipes on her channel, I've already tried out two of them.", "I've tried out 3 of Emma's recipes so far, and they're all amazing!"),
    "4b24c848": ("I've already bought three tops from H&M", "I've already got five tops from H&M so far"),
    "50635ada": ("I'm finally eligible for Premier Silver status.", "I just reached Premier Gold status."),
    "5831f84d": ("I've already finished 10 videos in the past few weeks!", "having watched 15 Crash Course videos in the past few weeks."),
    "5a4f22c0": ("I met Rachel, an old colleague from my previous company, at the TechConnect conference", "Rachel, an old colleague from my previous company, who's currently at TechCorp."),
    "6071bd76": ("1 tablespoon of coffee for every 6 ounces of water is the perfect ratio for me.", "1 tablespoon of coffee for every 5 ounces of water."),
    "6a1eabeb": ("I recently set a personal best time in a charity 5K run with a time of 27:12.", "I'm hoping to beat my personal best time of 25:50 this time around."),
    "6a27ffc2": ("I've completed 20 videos so far.", "I've completed 30 videos so far for Corey's series"),
    "6aeb4375": ("I've tried three different ones recently", "I've tried four different ones so far"),
    "71315a70": ("I've spent around 5-6 hours on it so far.", "I've already put in 10-12 hours, and it's still a work in progress."),
    "72e3ee87": ("I'm currently on episode 10 of the Science series!", "I've been watching Crash Course's Science series, and I just completed 50 episodes"),
    "7401057b": ("I've accumulated enough points for a single free night's stay at any Hilton property.", "I've accumulated enough points for two free night's stays at any Hilton property"),
    "7a87bd0c": ("I've been feeling really proud of myself for sticking to my daily tidying routine - it's already been 3 weeks!", "I've been sticking to my daily tidying routine for 4 weeks now"),
    "830ce83f": ("my friend Rachel who recently moved to a new apartment in the city.", "My friend Rachel actually just moved back to the suburbs again"),
    "8fb83627": ("I remember finishing three issues and I'm currently on my fourth.", "I've been reading about the Amazon rainforest and its indigenous communities in National Geographic, and I just finished my fifth issue."),
    "945e3d21": ("I've been doing yoga twice a week", "I attend yoga classes, which is three times a week"),
    "9bbe84a2": ("I'm determined to reach level 100 before the end of the year.", "I'm still aiming to hit level 150 eventually"),
    "b6019101": ("I've actually watched 4 MCU films in the last 3 months", "I've watched 12 films in the last 3 months, including 5 MCU films"),
    "cf22b7bf": ("I've lost 5 pounds in the past month", "I've lost 10 pounds since I started going consistently to the gym 3 months ago."),
    "dad224aa": ("I've been waking up around 8:30 am on Saturdays", "I like to wake up at 7:30 am on Saturdays"),
    "e61a7584": ("I've had Luna for about 6 months now", "I've had my cat, Luna, for about 9 months now"),
    "f685340e": ("reminds me of my own weekly tennis sessions with friends.", "I'm planning to play tennis with my friends at the local park this Sunday, like we do every other week."),
}  # fmt: skip


def longmemeval_updates() -> list[dict[str, Any]]:
    """The knowledge updates, each clause checked against its evidence turn's text; the split's half
    from tests/data/flag_streams_split.json. A question whose evidence repeats another's is kept once."""
    import gzip

    from scripts.longmemeval import DATA

    split = json.loads((REPO / "tests" / "data" / "flag_streams_split.json").read_text())
    half = {q: "tune" for q in split["longmemeval_tune"]} | {q: "test" for q in split["longmemeval_test"]}
    questions = {q["question_id"]: q for q in map(json.loads, open(DATA / "questions.jsonl", encoding="utf-8"))}
    wanted = {i for qid in LONGMEMEVAL_CLAUSES for i in questions[qid]["evidence_ids"]}
    turns = {}
    with gzip.open(DATA / "memories.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            memory = json.loads(line)
            if memory["id"] in wanted:
                turns[memory["id"]] = memory
    out = []
    for qid, (old, new) in LONGMEMEVAL_CLAUSES.items():
        evidence = sorted((turns[i] for i in questions[qid]["evidence_ids"] if i in turns), key=lambda m: (m["timestamp"], m["id"]))
        first, last = evidence[0], evidence[-1]
        if old not in first["text"] or new not in last["text"]:
            raise SystemExit(f"{qid}: a clause is not in its evidence turn")
        out.append({"question_id": qid, "split": half[qid], "question": questions[qid]["question"], "answer": questions[qid]["answer"],
                    "old_id": first["id"], "new_id": last["id"], "old": old, "new": new})  # fmt: skip
    return out


if __name__ == "__main__":
    sys.exit(main())
