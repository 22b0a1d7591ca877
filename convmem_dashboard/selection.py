"""The one conversation selection of the whole dashboard: every page's picker, in one call.

``conv_id = conversation_picker(dataset)`` (Token budget, Flaky store, Your data) or
``shopper = shopper_picker(dataset)`` (Listing eviction) renders a searchable selectbox whose
options are plain ids shown with a label (convmem_dashboard.choices: shopper, title, message and
token counts, id) and returns the choice (Home shows it as text: :func:`conversation_in_use`).
The choice lives in session state, one per dataset (``_selected_conv``), so it survives a page
switch, and in the URL as ``?conv=`` (and ``?shopper=`` on the shopper picker) so a link
reproduces it.

The selectboxes are not bound with ``bind="query-params"``: a bound selectbox writes its
*formatted* option into the URL, and the labels are long. The URL is read and written here
instead (:func:`convmem_dashboard.choices.resolve_selection` decides between the URL, the
session and the default). A URL value is adopted only when this session has not written it
itself, so a stale ``?conv=`` never undoes a pick.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from convmem.conversations import group_by_user

from .choices import (
    conversation_label,
    default_conversation_id,
    most_tokens_id,
    resolve_selection,
    shopper_label,
)
from .data import SPLIT_LOAD_MESSAGES, Dataset, get_dataset, md_escape
from .tables_eviction import shopper_key, shopper_options
from .url_params import kept_note

__all__ = ["Choices", "choices_of", "conversation_in_use", "conversation_picker", "selected_conversation", "shopper_picker"]

CONV_KEY = "conv"
SHOPPER_KEY = "shopper"
_SELECTED = "_selected_conv"  # {dataset key: conversation id}
_URL_SEEN = "_url_seen"  # {url key: the value this session last read or wrote}
_WIDGET_SET = "_widget_set"  # {widget key: the value this module last put in the widget}
_CONFLICT = "_link_shopper_conflict"  # the note of a link whose ?shopper= is not its ?conv='s


@dataclass(frozen=True)
class Choices:
    """A dataset's picker options as plain values (cached per dataset key)."""

    ids: tuple[str, ...]
    labels: dict[str, str]
    default: str | None
    shopper_of: dict[str, str]  # conversation id -> shopper key
    shoppers: tuple[str, ...]
    shopper_labels: dict[str, str]
    shopper_default: dict[str, str]  # shopper key -> the conversation it selects


def choices_of(dataset_key: str) -> Choices:
    """Options, labels and the default of a dataset. O(messages + listing mentions), once (cached
    per dataset key); a spinner says so while it runs when the dataset has more than
    :data:`convmem_dashboard.data.SPLIT_LOAD_MESSAGES` messages (a spinner starts a thread, so a
    small dataset gets none)."""
    if get_dataset(dataset_key).message_count > SPLIT_LOAD_MESSAGES:
        with st.spinner("Listing the conversations…"):
            return _choices(dataset_key)
    return _choices(dataset_key)


@st.cache_data(show_spinner=False, max_entries=16)
def _choices(dataset_key: str) -> Choices:
    convs = get_dataset(dataset_key).conversations
    groups = group_by_user(convs)
    shoppers = tuple(shopper_options(groups))
    return Choices(
        ids=tuple(c.id for c in convs),
        labels={c.id: conversation_label(c) for c in convs},
        default=default_conversation_id(convs),
        shopper_of={c.id: shopper_key(c.user_id) for c in convs},
        shoppers=shoppers,
        shopper_labels={shopper_key(u): shopper_label(shopper_key(u), g) for u, g in groups.items()},
        shopper_default={shopper_key(u): most_tokens_id(g) for u, g in groups.items()},
    )


def _state(name: str) -> dict:
    return st.session_state.setdefault(name, {})


def _url_value(key: str) -> str | None:
    value = st.query_params.get(key)
    return value if isinstance(value, str) else None


def _write_url(key: str, value: str) -> None:
    _state(_URL_SEEN)[key] = value
    if st.query_params.get(key) != value:
        st.query_params[key] = value


def _widget_pick(key: str, options: tuple[str, ...]) -> str | None:
    """The widget's value when the user changed it since this module last set it, else None."""
    now = st.session_state.get(key)
    if now is not None and now != _state(_WIDGET_SET).get(key) and now in options:
        return now
    return None


def selected_conversation(dataset: Dataset) -> str | None:
    """The conversation id this run shows for ``dataset`` (a new link's ``?conv=``, then the
    session's: the picker's new value, the conversation shown last when this dataset has it,
    this dataset's last choice; then the default), stored as the session's choice. Renders
    nothing."""
    ch = choices_of(dataset.key)
    selected = _state(_SELECTED)
    url = _url_value(CONV_KEY)
    # After a switch of dataset the URL still names the conversation shown last: kept when this
    # dataset has it too (the sample read from its file or from its SQLite store), then this
    # dataset's own last choice.
    carried = url if url is not None and url == _state(_URL_SEEN).get(CONV_KEY) and url in ch.ids else None
    session = _widget_pick(CONV_KEY, ch.ids) or carried or selected.get(dataset.key)
    # A new link's ?shopper= without a new ?conv= of this dataset selects that shopper's
    # conversation with the most tokens on any page, as the shopper picker does (session 27's
    # breaker: opened on Home, the link's shopper was passed over and the URL named a shopper and
    # another shopper's conversation). A shopper not in the dataset is left for the shopper
    # picker, which names it.
    link_conv = url is not None and url != _state(_URL_SEEN).get(CONV_KEY) and url in ch.ids
    shopper = _url_value(SHOPPER_KEY)
    if (not link_conv and shopper is not None and shopper != _state(_URL_SEEN).get(SHOPPER_KEY)
            and shopper in ch.shopper_default):
        _state(_URL_SEEN)[SHOPPER_KEY] = shopper
        session = ch.shopper_default[shopper]
    conv = resolve_selection(
        ch.ids, url=url, url_seen=_state(_URL_SEEN).get(CONV_KEY), session=session, default=ch.default
    )
    if url is not None and url != _state(_URL_SEEN).get(CONV_KEY) and url in ch.ids:
        _adopt_link_shopper(ch, url)
    if url is not None:
        _state(_URL_SEEN)[CONV_KEY] = url
    if conv is not None:
        selected[dataset.key] = conv
    return conv


def _adopt_link_shopper(ch: Choices, conv: str) -> None:
    """A new link's ``?conv=`` (``conv``, in this dataset) decides its shopper: the link's
    ``?shopper=`` is read as seen here, so no page adopts it later and swaps the conversation
    (break25: opened on Home, the shopper silently replaced the conversation on Listing
    eviction). When the two disagree, the note for :func:`_shopper_conflict_note` is kept."""
    shopper = _url_value(SHOPPER_KEY)
    if shopper is None or shopper == _state(_URL_SEEN).get(SHOPPER_KEY):
        return
    _state(_URL_SEEN)[SHOPPER_KEY] = shopper
    if shopper != ch.shopper_of[conv]:
        st.session_state[_CONFLICT] = (
            f"The link's shopper {md_escape(repr(shopper))} is not the shopper of its conversation "
            f"{md_escape(repr(conv))}: showing that conversation and its shopper "
            f"{md_escape(repr(ch.shopper_of[conv]))}."
        )


def _shopper_conflict_note(where) -> None:
    """Warn, in ``where``, about the link whose shopper and conversation disagreed (kept through
    the runs the dashboard splits from it, url_params.kept_note), once."""
    if note := kept_note(_CONFLICT, st.session_state.pop(_CONFLICT, None)):
        (where or st).warning(note, icon=":material/link:")


def _selectbox(where, label: str, key: str, options, value: str, labels: dict[str, str], help: str) -> None:
    st.session_state[key] = value
    _state(_WIDGET_SET)[key] = value
    where.selectbox(
        label, options, key=key, format_func=lambda o: labels.get(o, o), help=help,
        placeholder="Type to search",
    )


def conversation_in_use(dataset: Dataset, where=None) -> str | None:
    """The shared selection without a picker (Home shows it as a line of text): the conversation
    id this run shows, the link's unknown ``?conv=`` warned about in ``where`` as the picker
    does, and the id written to the URL. None when the dataset has no conversation."""
    ch = choices_of(dataset.key)
    url = _url_value(CONV_KEY)
    new_link = url is not None and url != _state(_URL_SEEN).get(CONV_KEY)
    conv = selected_conversation(dataset)
    if conv is None:
        return None
    _link_note(where, CONV_KEY, "conversation", url if new_link and url not in ch.ids else None, conv)
    _shopper_conflict_note(where)
    _write_url(CONV_KEY, conv)
    return conv


def conversation_picker(dataset: Dataset, where=None, label: str = "Conversation") -> str | None:
    """The shared conversation picker in ``where`` (a container; default the main area).

    Returns the chosen conversation id, None when the dataset has no conversation (nothing is
    rendered then). The same choice is shown on every page until the user picks another one.
    """
    ch = choices_of(dataset.key)
    conv = conversation_in_use(dataset, where)
    if conv is None:
        return None
    _selectbox(
        where or st, label, CONV_KEY, ch.ids, conv, ch.labels,
        "Shopper · first user message · messages · tokens · id. Type to search. The choice is "
        "kept on every page and in the URL (?conv=). Default: the longest conversation (most "
        "tokens) of the shopper the Listing eviction page opens on.",
    )
    _write_url(CONV_KEY, conv)
    return conv


def _link_note(where, key: str, what: str, unknown: str | None, shown: str) -> None:
    """Warn that the link's ``?key=`` named ``unknown`` (a ``what`` not in this dataset) and
    ``shown`` is shown instead: in the run that opens the link (``unknown`` given) and in the
    runs the dashboard splits from it (url_params.kept_note: a replay's slices end in a rerun,
    and the run the user sees must still say it), not after."""
    note = None if unknown is None else (
        f"The link's {what} {md_escape(repr(unknown))} is not in this dataset: showing "
        f"{md_escape(repr(shown))} instead."
    )
    if note := kept_note(key, note):
        (where or st).warning(note, icon=":material/link:")


def shopper_picker(dataset: Dataset, where=None, label: str = "Shopper") -> str | None:
    """The shared selection as a shopper: the shopper of the selected conversation.

    Picking a shopper selects that shopper's conversation with the most tokens (unless the
    selected one is already theirs). A link's ``?shopper=`` is read like ``?conv=``. Returns the
    shopper key (a user id, or NO_SHOPPER), None when the dataset has no conversation.
    """
    ch = choices_of(dataset.key)
    conv = selected_conversation(dataset)
    if conv is None:
        return None
    shopper = ch.shopper_of[conv]
    wanted = _widget_pick(SHOPPER_KEY, ch.shoppers)
    url = _url_value(SHOPPER_KEY)
    if wanted is None and url is not None and url != _state(_URL_SEEN).get(SHOPPER_KEY):
        _state(_URL_SEEN)[SHOPPER_KEY] = url
        wanted = url if url in ch.shopper_default else None
        unknown = url if wanted is None else None
    else:
        unknown = None
    if wanted is not None and wanted != shopper:
        shopper, conv = wanted, ch.shopper_default[wanted]
        _state(_SELECTED)[dataset.key] = conv
    _link_note(where, SHOPPER_KEY, "shopper", unknown, shopper)
    _shopper_conflict_note(where)
    _selectbox(
        where or st, label, SHOPPER_KEY, ch.shoppers, shopper, ch.shopper_labels,
        "Shopper (user id) · conversations · messages · tokens. Type to search. Kept on every "
        "page with the conversation picked (its shopper) and in the URL (?shopper=).",
    )
    _write_url(SHOPPER_KEY, shopper)
    _write_url(CONV_KEY, conv)
    return shopper
