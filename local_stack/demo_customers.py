"""Deterministic demo customers: the same realistic people on every run (seeded randomness).

Their ids are those the demo orders refer to (``C00001`` ...), sign-ups spread over the
``DEMO_SIGNUP_DAYS`` days up to today.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from local_stack.demo_orders import seed_items
from local_stack.demo_tenants import tenant_of

SEED = 20251102
DEMO_CUSTOMERS = 5_000
DEMO_SIGNUP_DAYS = 3 * 365

# country: (weight, calling code, cities, given names, family names)
_PEOPLE: dict[str, tuple[int, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "CN": (
        30,
        "+86",
        ("上海", "北京", "深圳", "杭州", "成都"),
        ("芳", "娜", "伟", "洋", "静", "磊", "敏", "晓明"),
        ("王", "李", "张", "刘", "陈", "杨", "赵", "黄"),
    ),
    "US": (
        14,
        "+1",
        ("New York", "Austin", "Seattle", "Chicago"),
        ("Emma", "Liam", "Olivia", "Noah", "Ava"),
        ("Johnson", "Smith", "Brown", "Davis", "O'Brien"),
    ),
    "DE": (
        10,
        "+49",
        ("Berlin", "München", "Köln", "Hamburg"),
        ("Noah", "Mia", "Lukas", "Hannah"),
        ("Müller", "Schmidt", "Schäfer", "Weiß"),
    ),
    "GB": (8, "+44", ("London", "Leeds", "Bristol"), ("Oliver", "Amelia", "Harry"), ("Smith", "Jones", "Taylor")),
    "FR": (7, "+33", ("Paris", "Lyon", "Marseille"), ("Chloé", "Léa", "Hugo"), ("Martin", "Bernard", "Dubois")),
    "ES": (5, "+34", ("Madrid", "Sevilla", "Valencia"), ("Sofía", "Mateo", "Lucía"), ("García", "López", "Núñez")),
    "IT": (5, "+39", ("Roma", "Milano", "Torino"), ("Lucas", "Giulia", "Marco"), ("Rossi", "Russo", "Bianchi")),
    "JP": (6, "+81", ("東京", "大阪", "京都"), ("Mia", "Haruto", "Yui"), ("Tanaka", "Sato", "Suzuki")),
    "KR": (4, "+82", ("서울", "부산"), ("Ethan", "Ji-woo", "Min-jun"), ("Kim", "Lee", "Park")),
    "TW": (3, "+886", ("台北", "高雄"), ("杰", "雪"), ("周", "吴")),
    "SG": (3, "+65", ("Singapore",), ("Wei", "Hui Min"), ("Tan", "Lim")),
    "CA": (3, "+1", ("Toronto", "Montréal", "Vancouver"), ("Olivia", "Noah"), ("Tremblay", "Roy")),
    "IE": (2, "+353", ("Dublin", "Cork"), ("Ava", "Seán"), ("Murphy", "O'Brien")),
}
_EAST_ASIAN_ORDER = frozenset({"CN", "TW"})
_PLANS = (("free", 60), ("plus", 30), ("business", 10))


def demo_customers(today: date, count: int = DEMO_CUSTOMERS, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """``count`` customers who signed up over the ``DEMO_SIGNUP_DAYS`` days up to ``today``."""
    rng = random.Random(seed)
    first_day = today - timedelta(days=DEMO_SIGNUP_DAYS - 1)
    countries = list(_PEOPLE)
    weights = [_PEOPLE[country][0] for country in countries]
    plans = [plan for plan, _ in _PLANS]
    plan_weights = [weight for _, weight in _PLANS]
    for number in range(1, count + 1):
        country = rng.choices(countries, weights)[0]
        _, calling_code, cities, given_names, family_names = _PEOPLE[country]
        given, family = rng.choice(given_names), rng.choice(family_names)
        name = f"{family}{given}" if country in _EAST_ASIAN_ORDER else f"{given} {family}"
        day = first_day + timedelta(days=rng.randrange(DEMO_SIGNUP_DAYS))
        signed_up_at = datetime.combine(day, time(), tzinfo=UTC) + timedelta(seconds=rng.randrange(86_400))
        yield {
            "customer_id": f"C{number:05d}",
            "tenant_id": tenant_of(f"C{number:05d}"),
            "name": name,
            "email": f"customer{number:05d}@example.com",
            # Phone numbers start with "+": a spreadsheet would read them as formulas.
            "phone": f"{calling_code} {rng.randrange(100, 999)} {rng.randrange(1000, 9999)}",
            "country": country,
            "city": rng.choice(cities),
            "signup_day": day.isoformat(),
            "signed_up_at": signed_up_at.isoformat(timespec="seconds"),
            "plan": rng.choices(plans, plan_weights)[0],
            "marketing_opt_in": rng.random() < 0.4,
        }


def seed_customers(dynamodb: Any, table: str, today: date, count: int = DEMO_CUSTOMERS) -> int:
    """Write the demo customers with batch writes; returns how many were written."""
    return seed_items(dynamodb, table, demo_customers(today, count))
