"""Seeded synthetic conversations: shoppers for demos and tests, huge conversations for speed.

Everything here is deterministic for a given seed (one ``random.Random(seed)``, no hash ordering,
no clock, no network), so a seed names a data set.

* :func:`generate_shoppers` — a few shoppers, each with several retail support conversations
  (system prompt, user/assistant turns, tool calls — some parallel — answered by tool results,
  occasional "503" tool errors retried, as in the real tau-bench run). Listing ids are 10-digit
  item ids drawn from one small catalog, so a shopper's conversations share ids. Tokens are
  counted by the given counter (default :func:`convmem.tokens.default_counter`). Product ids are
  ``P`` + 4 digits, so the default 10-digit extractor finds exactly the item ids.
* :func:`generate_conversation` — one conversation of any length (10^5 messages in about 0.4 s):
  system prompt, user turns, assistant replies, tool groups of 1-3 parallel calls. Its tokens are
  **drawn** from per-role log-normal distributions (system ~1,000, user ~40, assistant ~90,
  tool ~250 with a heavy tail), not counted; its content is a short placeholder that names the
  listing ids the message mentions.
* :func:`to_openai_jsonl` (from :mod:`convmem.conversations`) writes any of them as OpenAI chat
  JSONL that :func:`convmem.load_conversations` reads back equal (tokens included).

>>> convs = generate_shoppers(seed=1, n_shoppers=2, conversations_per_shopper=(1, 2))
>>> convs == generate_shoppers(seed=1, n_shoppers=2, conversations_per_shopper=(1, 2))
True
>>> big = generate_conversation(1000, seed=3)
>>> len(big.messages), big.messages[0].role, big.messages[1].role
(1000, 'system', 'user')
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Sequence
from typing import Any

from .conversations import Conversation, ToolCall, to_openai_jsonl
from .formats import openai_chat
from .formats._base import Context, Where, new_message, new_tool_call
from .message import Message
from .tokens import TokenCounter

__all__ = ["generate_conversation", "generate_shoppers", "to_openai_jsonl"]

SYSTEM_PROMPT = """\
# Retail agent policy

You are a customer support agent for an online store. You can help shoppers check orders, cancel \
or modify pending orders, return or exchange delivered items, and answer questions about products.

- Authenticate the shopper first: find their user id by email, or by name and zip code, even when \
they already give a user id.
- Only act on the authenticated shopper's own orders. Before any action that changes an order \
(cancel, modify, return, exchange), list the details and get an explicit "yes" to proceed.
- An exchange swaps an item for another variant of the same product; the price difference is \
charged or refunded to a payment method on file. A return refunds the original payment method or \
a gift card.
- Make one tool call at a time unless the calls are independent, and never invent an item id, \
order id or price: read them from tool results.
- If a tool fails with a transient error, retry it once before telling the shopper.
- Transfer to a human agent only when the request is outside this policy."""

_PRODUCTS: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    ("T-Shirt", (("color", ("red", "blue", "black", "white")), ("size", ("S", "M", "L", "XL")))),
    ("Running Shoes", (("size", ("8", "9", "10", "11")), ("color", ("black", "white", "grey")))),
    ("Desk Lamp", (("color", ("black", "silver", "white")), ("power source", ("USB", "AC")))),
    ("Water Bottle", (("capacity", ("500ml", "750ml", "1000ml")), ("color", ("blue", "green")))),
    ("Backpack", (("size", ("small", "medium", "large")), ("color", ("black", "navy", "olive")))),
    ("Bluetooth Speaker", (("color", ("black", "red", "blue")), ("battery life", ("10h", "20h")))),
    ("Office Chair", (("material", ("mesh", "leather")), ("color", ("black", "grey", "blue")))),
    ("Coffee Maker", (("type", ("drip", "espresso")), ("capacity", ("4 cups", "8 cups")))),
    ("Yoga Mat", (("thickness", ("4mm", "6mm")), ("color", ("purple", "blue", "black")))),
    ("Headphones", (("type", ("over-ear", "on-ear")), ("color", ("black", "white", "silver")))),
    ("Mechanical Keyboard",
     (("switch", ("linear", "tactile", "clicky")), ("layout", ("full", "TKL")))),
    ("Electric Kettle", (("capacity", ("1L", "1.5L", "1.7L")), ("material", ("glass", "steel")))),
)
_FIRST = ("Yusuf", "Mei", "Mia", "Omar", "Sofia", "Ethan", "Aarav", "Lucas", "Noah", "Isabella",
          "Chen", "Amara", "Lena", "Raj", "Fatima", "Diego")
_LAST = ("Rossi", "Kovacs", "Garcia", "Hassan", "Silva", "Brown", "Patel", "Muller", "Kim",
         "Santos", "Wang", "Okafor", "Novak", "Singh", "Ali", "Lopez")
_INTENTS = ("exchange", "return", "status", "browse", "cancel")


@dataclasses.dataclass
class _Item:
    item_id: str
    product_id: str
    product: str
    options: dict[str, str]
    price: float
    available: bool

    def label(self) -> str:
        opts = ", ".join(f"{k} {v}" for k, v in self.options.items())
        return f"{self.product} ({opts})"


@dataclasses.dataclass
class _Order:
    order_id: str
    status: str
    items: list[_Item]


@dataclasses.dataclass
class _Shopper:
    user_id: str
    first: str
    last: str
    email: str
    zip: str
    payment: str
    orders: list[_Order]


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return value


def _catalog(rng: random.Random, n_products: int) -> dict[str, list[_Item]]:
    catalog: dict[str, list[_Item]] = {}
    used: set[str] = set()
    product_numbers = rng.sample(range(1000, 10000), n_products)
    for (name, options), number in zip(_PRODUCTS[:n_products], product_numbers):
        product_id = f"P{number}"
        combos = [{}]  # type: list[dict[str, str]]
        for key, values in options:
            combos = [{**c, key: v} for c in combos for v in values]
        chosen = rng.sample(combos, min(len(combos), rng.randint(3, 6)))
        base = rng.randint(15, 300)
        items = []
        for opts in chosen:
            while True:
                item_id = str(rng.randrange(1_000_000_000, 10_000_000_000))
                if item_id not in used:
                    used.add(item_id)
                    break
            price = round(base * rng.uniform(0.85, 1.2), 2)
            items.append(_Item(item_id, product_id, name, opts, price, rng.random() < 0.8))
        catalog[product_id] = items
    return catalog


def _shoppers(rng: random.Random, n: int, catalog: dict[str, list[_Item]]) -> list[_Shopper]:
    items = [it for variants in catalog.values() for it in variants]
    out = []
    names = rng.sample([(f, l) for f in _FIRST for l in _LAST], n)
    for first, last in names:
        user_id = f"{first.lower()}_{last.lower()}_{rng.randint(1000, 9999)}"
        orders = []
        for _ in range(rng.randint(2, 4)):
            order_items = rng.sample(items, rng.randint(1, 4))
            status = rng.choice(("delivered", "delivered", "pending", "processed"))
            orders.append(_Order(f"#W{rng.randint(1_000_000, 9_999_999)}", status, order_items))
        out.append(
            _Shopper(
                user_id,
                first,
                last,
                f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
                f"{rng.randint(10000, 99999)}",
                f"credit_card_{rng.randint(1_000_000, 9_999_999)}",
                orders,
            )
        )
    return out


class _Script:
    """Writes one conversation as OpenAI message dicts."""

    def __init__(self, rng: random.Random, conv_id: str) -> None:
        self.rng = rng
        self.conv_id = conv_id
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.n_calls = 0

    def say(self, role: str, text: str) -> None:
        self.messages.append({"role": role, "content": text})

    def call(self, text: str | None, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
        ids = []
        tool_calls = []
        for name, args in calls:
            self.n_calls += 1
            call_id = f"call_{self.conv_id}_{self.n_calls}"
            ids.append(call_id)
            tool_calls.append({"id": call_id, "type": "function",
                               "function": {"name": name, "arguments": json.dumps(args)}})
        self.messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        return ids

    def result(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


def _order_json(order: _Order, shopper: _Shopper) -> str:
    return json.dumps({
        "order_id": order.order_id,
        "user_id": shopper.user_id,
        "status": order.status,
        "items": [{"name": it.product, "product_id": it.product_id, "item_id": it.item_id,
                   "price": it.price, "options": it.options} for it in order.items],
        "payment_history": [{"transaction_type": "payment", "payment_method_id": shopper.payment,
                             "amount": round(sum(it.price for it in order.items), 2)}],
    })


def _product_json(variants: list[_Item]) -> str:
    first = variants[0]
    return json.dumps({
        "name": first.product,
        "product_id": first.product_id,
        "variants": {it.item_id: {"item_id": it.item_id, "options": it.options,
                                  "available": it.available, "price": it.price}
                     for it in variants},
    })


def _conversation(
    rng: random.Random, conv_id: str, shopper: _Shopper, catalog: dict[str, list[_Item]]
) -> list[dict[str, Any]]:
    s = _Script(rng, conv_id)
    intent = rng.choice(_INTENTS)
    order = rng.choice(shopper.orders)
    openers = {
        "exchange": f"Hi, I got my order {order.order_id} and I'd like to exchange something "
                    "in it.",
        "return": f"Hello, I want to return some items from order {order.order_id}.",
        "status": f"Hey, can you tell me where my order {order.order_id} is?",
        "browse": "Hi! I'm thinking about buying something and have a few questions about your "
                  "products.",
        "cancel": f"Hi, please cancel my order {order.order_id}, I don't need it anymore.",
    }
    s.say("user", openers[intent])
    s.say("assistant", "I'd be glad to help. First I need to verify your identity: could you give "
                       "me the email address on your account, or your name and zip code?")
    if rng.random() < 0.5:
        s.say("user", f"Sure, it's {shopper.email}.")
        (cid,) = s.call(None, [("find_user_id_by_email", {"email": shopper.email})])
    else:
        s.say("user", f"I'm {shopper.first} {shopper.last}, zip {shopper.zip}.")
        (cid,) = s.call(None, [("find_user_id_by_name_zip", {
            "first_name": shopper.first, "last_name": shopper.last, "zip": shopper.zip})])
    s.result(cid, shopper.user_id)
    if intent == "browse":
        products = rng.sample(sorted(catalog), 2)
        ids = s.call(f"Thanks, {shopper.first}, you're verified. Let me pull up two products.",
                     [("get_product_details", {"product_id": p}) for p in products])
        for cid, p in zip(ids, products):
            s.result(cid, _product_json(catalog[p]))
        lines = []
        for p in products:
            for it in catalog[p][:3]:
                state = "in stock" if it.available else "out of stock"
                lines.append(f"- {it.label()}: item {it.item_id}, ${it.price:.2f}, {state}")
        s.say("assistant", "Here are some options:\n" + "\n".join(lines))
        pick = rng.choice(catalog[products[0]])
        s.say("user", f"Is item {pick.item_id} still available in other colors or sizes?")
        others = [it for it in catalog[products[0]] if it.item_id != pick.item_id]
        s.say("assistant", "Other variants of the same product: " + "; ".join(
            f"{it.label()} (item {it.item_id})" for it in others) + ".")
    else:
        orders = [order]
        extra = [o for o in shopper.orders if o is not order]
        if extra and rng.random() < 0.4:
            orders.append(rng.choice(extra))
            s.say("user", f"Could you also check order {orders[1].order_id} while you're at it?")
        ids = s.call(f"Thank you, {shopper.first}. Let me look up the order details.",
                     [("get_order_details", {"order_id": o.order_id}) for o in orders])
        for k, (cid, o) in enumerate(zip(ids, orders)):
            if k == 0 and rng.random() < 0.3:
                s.result(cid, "Error: 503 Service Unavailable")
                (cid,) = s.call("The order service had a hiccup; retrying.",
                                [("get_order_details", {"order_id": o.order_id})])
            s.result(cid, _order_json(o, shopper))
        summary = "\n".join(f"- {it.label()}, item {it.item_id}, ${it.price:.2f}"
                            for it in order.items)
        s.say("assistant", f"Order {order.order_id} is {order.status} and contains:\n{summary}")
        item = rng.choice(order.items)
        if intent == "exchange":
            s.say("user", f"I'd like to swap the {item.product} for a different option.")
            (cid,) = s.call(None, [("get_product_details", {"product_id": item.product_id})])
            s.result(cid, _product_json(catalog[item.product_id]))
            choices = [it for it in catalog[item.product_id]
                       if it.item_id != item.item_id and it.available]
            if choices:
                new = rng.choice(choices)
                s.say("assistant", "Available alternatives: " + "; ".join(
                    f"{it.label()} - item {it.item_id} at ${it.price:.2f}" for it in choices))
                s.say("user", f"The {', '.join(new.options.values())} one, please.")
                s.say("assistant", f"To confirm: exchange item {item.item_id} for item "
                                   f"{new.item_id} in order {order.order_id}, price difference "
                                   f"${new.price - item.price:.2f} settled with "
                                   f"{shopper.payment}. Shall I proceed (yes/no)?")
                s.say("user", "Yes, go ahead.")
                (cid,) = s.call(None, [("exchange_delivered_order_items", {
                    "order_id": order.order_id, "item_ids": [item.item_id],
                    "new_item_ids": [new.item_id], "payment_method_id": shopper.payment})])
                s.result(cid, json.dumps({"order_id": order.order_id,
                                          "status": "exchange requested",
                                          "exchange_items": [item.item_id],
                                          "exchange_new_items": [new.item_id]}))
                s.say("assistant", "Done: the exchange is requested. You'll get an email with "
                                   "return instructions.")
            else:
                s.say("assistant", f"Sorry, no other variant of the {item.product} is in stock.")
        elif intent == "return":
            picked = rng.sample(order.items, rng.randint(1, len(order.items)))
            s.say("user", "I want to return " + " and ".join(it.product for it in picked) + ".")
            ids_ = [it.item_id for it in picked]
            s.say("assistant", f"To confirm: return items {', '.join(ids_)} from order "
                               f"{order.order_id}, refund to {shopper.payment}. Proceed (yes/no)?")
            s.say("user", "Yes.")
            (cid,) = s.call(None, [("return_delivered_order_items", {
                "order_id": order.order_id, "item_ids": ids_,
                "payment_method_id": shopper.payment})])
            s.result(cid, json.dumps({"order_id": order.order_id, "status": "return requested",
                                      "return_items": ids_}))
            s.say("assistant", "Your return is requested; the refund arrives in 5-7 business days.")
        elif intent == "cancel":
            s.say("assistant", f"Order {order.order_id} can be cancelled while pending. Confirm "
                               "cancelling it because you no longer need it (yes/no)?")
            s.say("user", "Yes, cancel it.")
            (cid,) = s.call(None, [("cancel_pending_order", {
                "order_id": order.order_id, "reason": "no longer needed"})])
            if order.status == "pending":
                s.result(cid, json.dumps({"order_id": order.order_id, "status": "cancelled"}))
                s.say("assistant", "The order is cancelled and the refund is on its way.")
            else:
                s.result(cid, "Error: non-pending order cannot be cancelled")
                s.say("assistant", f"I'm sorry: the order is already {order.status}, so it can't "
                                   "be cancelled. You can return the items once delivered.")
        else:  # status
            s.say("user", f"And the {item.product}, when will it arrive?")
            s.say("assistant", f"The {item.label()} (item {item.item_id}) is part of that "
                               f"{order.status} order; you'll get tracking details by email.")
    s.say("user", rng.choice(("Thanks, that's all.", "Great, thank you!", "Perfect. Bye!")))
    s.say("assistant", "You're welcome! Have a great day.")
    return s.messages


def generate_shoppers(
    *,
    seed: int = 0,
    n_shoppers: int = 6,
    conversations_per_shopper: tuple[int, int] = (2, 6),
    n_products: int = 8,
    counter: TokenCounter | None = None,
) -> list[Conversation]:
    """Retail support conversations of a few shoppers, in a seeded interleaved timeline.

    Args:
        seed: the random seed; the same arguments give equal output.
        n_shoppers: how many shoppers (1..256).
        conversations_per_shopper: inclusive (low, high) range drawn per shopper (low >= 1).
        n_products: catalog size in products (1..12), each with 3-6 variants (item ids).
        counter: token counter (default :func:`convmem.tokens.default_counter`).

    Returns:
        the conversations, each shopper's in order (group with :func:`convmem.group_by_user`);
        ids ``f"{user_id}-{k}"`` (k from 1), message ids ``f"{conversation_id}:{index}"``,
        ``source="synthetic"``. About 17 messages and 900 tokens per conversation.
        O(conversations x messages).

    Raises:
        TypeError/ValueError: a bad argument (names it).
    """
    _check_int("seed", seed, -(2**63))
    _check_int("n_shoppers", n_shoppers, 1)
    if n_shoppers > len(_FIRST) * len(_LAST):
        raise ValueError(f"n_shoppers must be <= {len(_FIRST) * len(_LAST)}, got {n_shoppers}")
    if not (isinstance(conversations_per_shopper, tuple) and len(conversations_per_shopper) == 2):
        raise TypeError(
            "conversations_per_shopper must be a (low, high) tuple, "
            f"got {conversations_per_shopper!r}"
        )
    low = _check_int("conversations_per_shopper[0]", conversations_per_shopper[0], 1)
    high = _check_int("conversations_per_shopper[1]", conversations_per_shopper[1], low)
    _check_int("n_products", n_products, 1)
    if n_products > len(_PRODUCTS):
        raise ValueError(f"n_products must be <= {len(_PRODUCTS)}, got {n_products}")
    rng = random.Random(seed)
    catalog = _catalog(rng, n_products)
    shoppers = _shoppers(rng, n_shoppers, catalog)
    queues = [[s] * rng.randint(low, high) for s in shoppers]
    # An interleaved timeline: pick the next shopper at random, keeping each one's own order.
    timeline: list[_Shopper] = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        timeline.append(q.pop())
    ctx = Context("synthetic", counter, None, strict=True)
    done: dict[str, int] = {}
    out = []
    for k, shopper in enumerate(timeline):
        done[shopper.user_id] = done.get(shopper.user_id, 0) + 1
        conv_id = f"{shopper.user_id}-{done[shopper.user_id]}"
        record = {"id": conv_id, "user_id": shopper.user_id,
                  "messages": _conversation(rng, conv_id, shopper, catalog)}
        conv = openai_chat.parse(record, ctx, Where(k + 1, "", False))
        out.append(dataclasses.replace(conv, source_format="synthetic"))
    return out


# Per-role token draws of generate_conversation: (median, log-sd, cap).
_DRAWS = {"user": (40, 0.8, 2_000), "assistant": (90, 0.7, 3_000), "call": (30, 0.4, 400),
          "tool": (250, 1.0, 8_000)}


def generate_conversation(
    n_messages: int,
    *,
    seed: int = 0,
    conversation_id: str = "synthetic",
    user_id: str | None = None,
    n_listings: int = 500,
) -> Conversation:
    """One long synthetic conversation of exactly ``n_messages`` messages, fast.

    Message 0 is a system prompt; then turns of a user message, an optional tool group (an
    assistant message with 1-3 parallel calls and one tool result per call, sometimes two rounds)
    and an assistant reply, cut to length (a group that does not fit shrinks or becomes a plain
    reply, so every tool result answers an earlier call). Tokens are drawn, not counted (module
    docstring). Tool results and some replies name 10-digit listing ids from a pool of
    ``n_listings``; ``listing_ids`` lists them in order of mention, as the default extractor finds
    them. O(n_messages): about 4 us per message. The messages are built without Message's checks
    (convmem.formats._base.new_message: every field is valid by construction here; a test
    compares them with checked ones), which halves the cost of a 10^5-message dataset.

    Raises:
        TypeError/ValueError: a bad argument.

    >>> c = generate_conversation(6, seed=0)
    >>> [m.role for m in c.messages]
    ['system', 'user', 'assistant', 'tool', 'assistant', 'user']
    """
    _check_int("n_messages", n_messages, 0)
    _check_int("seed", seed, -(2**63))
    _check_int("n_listings", n_listings, 1)
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError(f"conversation_id must be a non-empty str, got {conversation_id!r}")
    if user_id is not None and not isinstance(user_id, str):
        raise TypeError(f"user_id must be a str or None, got {user_id!r}")
    rng = random.Random(seed)
    pool = [str(x) for x in rng.sample(range(1_000_000_000, 10_000_000_000), n_listings)]
    lognorm = rng.lognormvariate
    random_ = rng.random
    choice = rng.choice
    params = {role: (math.log(med), sd, cap) for role, (med, sd, cap) in _DRAWS.items()}

    def draw(kind: str) -> int:
        mu, sd, cap = params[kind]
        return min(cap, max(1, int(lognorm(mu, sd))))

    cid = conversation_id
    messages: list[Message] = []
    calls: list[ToolCall] = []
    listings: list[str] = []
    add = messages.append
    if n_messages:
        add(new_message(f"{cid}:0", "system", rng.randint(600, 1500), "System prompt.", (), None))
    n_call = 0
    turn = 0
    while len(messages) < n_messages:
        turn += 1
        i = len(messages)
        add(new_message(f"{cid}:{i}", "user", draw("user"), f"User turn {turn}.", (), None))
        rounds = 0
        while random_() < (0.5 if rounds == 0 else 0.3) and rounds < 2:
            room = n_messages - len(messages)
            if room < 2:
                break
            rounds += 1
            r = random_()
            k = min(1 if r < 0.7 else (2 if r < 0.9 else 3), room - 1)
            i = len(messages)
            ids = []
            for _ in range(k):
                n_call += 1
                ids.append(f"call_{n_call}")
            for call_id in ids:
                calls.append(new_tool_call(call_id, "get_product_details", "{}", f"{cid}:{i}"))
            add(new_message(f"{cid}:{i}", "assistant", draw("call"), None, tuple(ids), None))
            for call_id in ids:
                i = len(messages)
                a, b = choice(pool), choice(pool)
                listings.append(a)
                listings.append(b)
                add(new_message(f"{cid}:{i}", "tool", draw("tool"), f"Variants {a}, {b}.", (), call_id))
        if len(messages) < n_messages:
            i = len(messages)
            if random_() < 0.3:
                a = choice(pool)
                listings.append(a)
                text = f"Reply {turn}: see item {a}."
            else:
                text = f"Reply {turn}."
            add(new_message(f"{cid}:{i}", "assistant", draw("assistant"), text, (), None))
    return Conversation(cid, user_id, tuple(messages), tuple(listings), tuple(calls),
                        source="synthetic", source_format="synthetic")
