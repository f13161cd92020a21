"""``fairpair label RUN``: a local page for blind human labelling of one judge measure row.

The page (``aiohttp.web`` on 127.0.0.1 only; one jinja2 template with inline style and script,
no external asset, no request leaves the machine, no account) shows one answer at a time, in the
draw order of the measure's labelling sample (:mod:`fairpair.measures._labelsample`), with the
conversation it answers, everything masked with the battery's masker (the judge's own masking:
names, signal values and group references become ``[MASK]``); it never shows the group, the name,
the target, the template or the judge's score. The rater answers on the measure's rubric (the
levels, or no/yes for a ``scoring: yes_no`` judge) by key (the level's digit; ``s`` skip; ``u``
or Backspace undo) or by button. Each label is committed to the run's store as it is given
(:meth:`fairpair.store.Store.add_label`), so a closed tab or a killed server loses nothing, and a
rater who comes back continues at the first answer of the draw order they have neither labelled
nor skipped. Several raters label the same sample, each by name (``?rater=NAME``), each with
their own progress; undo appends a withdrawal of the rater's last label or skip.

The page holds the store open (not the run's writer lock: ``fairpair measure`` or ``analyze`` may
run meanwhile; SQLite serialises the writes).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpair.errors import FairpairError
from fairpair.measures._labelsample import DEFAULT_MIXING, LabelMeasure, draw_label_sample, label_measure
from fairpair.records import LabelSample

if TYPE_CHECKING:
    from fairpair.measures._mask import Masker
    from fairpair.store import Store

__all__ = ["LabelSession", "open_label_session", "serve_labels", "label_app", "LABEL_PORT"]

#: The page's default port on 127.0.0.1 (not 8765, which the docs' example chatbots use).
LABEL_PORT = 8779


@dataclass
class LabelSession:
    """One measure row's labelling on one run: its :class:`LabelMeasure`, its stored
    :class:`~fairpair.records.LabelSample`, the store (open for the session) and the masker.

    Every method reads the store afresh: what another page (or another process) stored is seen.
    """

    run_dir: Path
    store: Store
    measure: LabelMeasure
    sample: LabelSample
    masker: Masker
    notes: list[str] = field(default_factory=list)

    def acted(self, rater: str) -> set[tuple[str, str]]:
        """The answers ``rater`` has labelled or skipped (not withdrawn)."""
        return {(a.target, a.case_id) for a in self.store.label_actions(self.measure.row, rater)}

    def next_answer(self, rater: str):
        """The first :class:`~fairpair.records.SampledAnswer` of the draw order ``rater`` has not acted
        on, or None when they have been through the whole sample."""
        done = self.acted(rater)
        return next((a for a in self.sample.answers if (a.target, a.case_id) not in done), None)

    def progress(self, rater: str) -> dict[str, int]:
        """``{"labelled", "skipped", "total"}`` for ``rater`` (their current actions) and ``others``:
        labels by the other raters of this measure."""
        acts = [a for a in self.store.label_actions(self.measure.row, rater)
                if self.sample.get(a.target, a.case_id) is not None]
        last: dict[tuple[str, str], Any] = {}
        for a in acts:
            last[(a.target, a.case_id)] = a.value
        others = sum(1 for x in self.store.labels(self.measure.row) if x.rater != rater)
        return {"labelled": sum(v is not None for v in last.values()), "skipped": sum(v is None for v in last.values()),
                "total": len(self.sample), "others": others}

    def give(self, rater: str, order: int, value: float | None) -> bool:
        """Store ``rater``'s label (``value`` None: a skip) of the sample's answer at draw ``order``.
        Returns False (and stores nothing) when the rater acted on it already (a double key press
        while the page reloads) or ``order`` is not in the sample.

        Raises
        ------
        ValueError
            ``value`` is not one of the measure's choices; the rater's name is empty.
        """
        if value is not None and value not in {v for _, v, _ in self.measure.choices()}:
            raise ValueError(f"{value} is not a choice of '{self.measure.row}'")
        a = next((x for x in self.sample.answers if x.order == order), None)
        if a is None or (a.target, a.case_id) in self.acted(rater):
            return False
        self.store.add_label(target=a.target, case_id=a.case_id, measure=self.measure.row, rater=rater,
                             value=value, source="page")
        return True

    def undo(self, rater: str) -> bool:
        """Withdraw ``rater``'s last label or skip of this measure (appended; nothing is deleted);
        False when there is nothing to undo."""
        acts = self.store.label_actions(self.measure.row, rater)
        return bool(acts) and self.store.withdraw_label(acts[-1].id)

    def conversation(self, target: str, case_id: str) -> list[dict[str, str]]:
        """The masked conversation the answer answers, and the answer (the last ``assistant`` message):
        the case's system prompt and earlier messages, each user turn and the target's reply."""
        case = self.store.case(case_id)
        if case is None:  # never in an append-only store: the sample was drawn from its cases
            raise FairpairError(f"case {case_id} of the labelling sample is not in the run's store")
        answer = self.store.answer(target, case_id)
        mk = self.masker.mask
        out = [{"role": m.get("role", "user"), "content": mk(m.get("content") or "")} for m in case.messages]
        replies = list(answer.turns) if answer is not None else []
        for i, turn in enumerate(case.turns):
            out.append({"role": "user", "content": mk(turn)})
            if i < len(case.turns) - 1:
                out.append({"role": "assistant", "content": mk(replies[i] if i < len(replies) else "")})
        out.append({"role": "assistant", "content": mk((answer.text if answer is not None else "") or "")})
        return out

    def close(self) -> None:
        self.store.close()


def open_label_session(run_dir: Path, *, measure: str | None = None, n: int | None = None, seed: int | None = None,
                       mixing: float | None = None, new_sample: bool = False) -> LabelSession:
    """Open ``run_dir`` for labelling ``measure`` (default: the first judge measure row): draw and store
    its labelling sample the first time (``n`` answers, default 100; ``seed`` default 0; ``mixing``
    default :data:`~fairpair.measures._labelsample.DEFAULT_MIXING`), reuse the latest stored one after.

    ``new_sample``: draw another sample (default seed: one more than the latest page sample's) and
    store it beside the earlier ones as ``page-2``, ``page-3``, ...; the page then shows it. Nothing
    stored is changed: the earlier samples and every label given on them stay, and count in the
    analysis (:func:`fairpair.analysis._corrected.load_labels`); a rater is not shown an answer they
    labelled already.

    ``notes`` says when a given ``n``, ``seed`` or ``mixing`` differs from the stored sample's (the
    stored sample is kept: raters may have labelled it) and how to draw a new one.

    Raises
    ------
    FairpairError
        Not a run directory, no judge measure, an unknown ``measure``, nothing measured, or the run
        is in use by another writer while the sample is drawn.
    """
    from dataclasses import replace

    from fairpair.battery import recorded_battery
    from fairpair.measures._runner import masker_for
    from fairpair.store import Run, Store

    run_dir = Path(run_dir)
    notes: list[str] = []
    with Run.open(run_dir, "w") as run:  # the lock only while the sample is drawn and stored
        battery = recorded_battery(run).battery
        lm = label_measure(battery, measure)
        pages = [x for x in run.store.label_samples(lm.row) if _page_sample(x.name)]
        sample = pages[-1] if pages else None
        if sample is None or new_sample:
            first_seed = (max(x.seed for x in pages) + 1) if pages else 0
            drawn = draw_label_sample(run.store, lm, n=100 if n is None else n,
                                      seed=first_seed if seed is None else seed,
                                      mixing=DEFAULT_MIXING if mixing is None else mixing)
            name = "page" if not pages else f"page-{len(pages) + 1}"
            sample = run.store.add_label_sample(replace(drawn, name=name))
            if pages:
                notes.append(f"drew a new labelling sample of '{lm.row}' ('{name}', seed {sample.seed}); the "
                             f"{len(pages)} earlier one(s) and their labels are kept and count in the analysis")
        else:
            given = {"--n": (n, None), "--seed": (seed, sample.seed), "--mixing": (mixing, sample.mixing)}
            differ = [k for k, (v, stored) in given.items() if v is not None and (k == "--n" or v != stored)]
            if differ:
                notes.append(f"the labelling sample of '{lm.row}' was drawn already ({len(sample)} answers, seed "
                             f"{sample.seed}, {sample.design}); {', '.join(differ)} ignored: the stored sample is "
                             "kept, raters may have labelled it; `--new-sample` draws another beside it (its "
                             "labels are kept)")
        masker = masker_for(battery)
    store = Store.open(run_dir, create=False)
    return LabelSession(run_dir, store, lm, sample, masker, notes)


def _page_sample(name: str) -> bool:
    """A sample ``fairpair label`` drew (``page``, ``page-2``, ...), not a ``calibrate export`` file's."""
    return name == "page" or (name.startswith("page-") and name[5:].isdigit())


def _template():
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("fairpair.measures", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("label.html.j2")


def label_app(session: LabelSession, *, rater: str | None = None):
    """The ``aiohttp.web.Application`` of the page (``GET /``, ``POST /label``, ``/skip``, ``/undo``).

    Every response carries a Content-Security-Policy that allows nothing but the page itself and
    its inline style and (nonced) script, so the page cannot fetch anything even if an answer
    holds HTML (which jinja2's autoescape prints as text anyway). A request whose Host is not
    127.0.0.1 or localhost (DNS rebinding), or a POST from another origin (a cross-site form),
    is refused with 403.
    """
    from aiohttp import web

    template = _template()

    def page(html: str, nonce: str) -> web.Response:
        csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; form-action 'self'; "
               "base-uri 'none'; frame-ancestors 'none'")
        return web.Response(text=html, content_type="text/html", charset="utf-8",
                            headers={"Content-Security-Policy": csp, "Cache-Control": "no-store",
                                     "Referrer-Policy": "same-origin"})

    def who(request: web.Request, form: Any = None) -> str:
        name = ((form or {}).get("rater") or request.query.get("rater") or rater or "").strip()
        return name[:80]

    async def index(request: web.Request) -> web.Response:
        name = who(request)
        nonce = secrets.token_urlsafe(16)
        lm = session.measure
        ctx: dict[str, Any] = {"nonce": nonce, "rater": name, "measure": lm, "choices": lm.choices(),
                               "raters": session.store.label_raters(lm.row), "item": None, "messages": [],
                               "progress": None, "notice": request.query.get("notice", "")}
        if name:
            item = session.next_answer(name)
            ctx["progress"] = session.progress(name)
            ctx["can_undo"] = bool(session.store.label_actions(lm.row, name))
            if item is not None:
                ctx["item"] = item.order
                ctx["messages"] = session.conversation(item.target, item.case_id)
        ctx.setdefault("can_undo", False)
        return page(template.render(**ctx), nonce)

    def back(name: str, notice: str = "") -> web.HTTPSeeOther:
        from urllib.parse import urlencode

        q = {"rater": name, **({"notice": notice} if notice else {})}
        return web.HTTPSeeOther("/?" + urlencode(q))

    async def label(request: web.Request) -> web.Response:
        form = await request.post()
        name = who(request, form)
        if not name:
            raise web.HTTPBadRequest(text="a rater's name is needed")
        try:
            order = int(str(form.get("order", "")))
            value = float(str(form.get("value", "")))
            session.give(name, order, value)
        except ValueError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        raise back(name)

    async def skip(request: web.Request) -> web.Response:
        form = await request.post()
        name = who(request, form)
        try:
            session.give(name, int(str(form.get("order", ""))), None)
        except ValueError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        raise back(name)

    async def undo(request: web.Request) -> web.Response:
        form = await request.post()
        name = who(request, form)
        raise back(name, "" if session.undo(name) else "nothing to undo")

    @web.middleware
    async def same_origin(request: web.Request, handler):
        # DNS rebinding: a page of another site resolved to 127.0.0.1 names its own host; cross-site
        # form posts (CSRF) carry their origin. Both are refused: only this page may write labels.
        host = request.host.rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost"):
            raise web.HTTPForbidden(text="the labelling page answers only as 127.0.0.1 or localhost")
        # a browser sends this page's own origin with its forms (Referrer-Policy same-origin; "null" under
        # no-referrer or from a sandboxed frame, refused) and Sec-Fetch-Site same-origin
        origin = request.headers.get("Origin")
        site = request.headers.get("Sec-Fetch-Site", "same-origin")
        if request.method == "POST" and (origin not in (None, f"http://{request.host}") or
                                         site not in ("same-origin", "none")):
            raise web.HTTPForbidden(text="a label can only be given from this page")
        return await handler(request)

    app = web.Application(middlewares=[same_origin])
    app.add_routes([web.get("/", index), web.post("/label", label), web.post("/skip", skip),
                    web.post("/undo", undo)])
    return app


def serve_labels(session: LabelSession, *, port: int = LABEL_PORT, rater: str | None = None, announce=print) -> None:
    """Serve the page on ``127.0.0.1:port`` (``port`` 0: a free one) until interrupted; ``announce`` gets
    the URL once the socket listens.

    Raises
    ------
    FairpairError
        The port is in use (or not allowed).
    """
    import asyncio

    from aiohttp import web

    async def main() -> None:
        runner = web.AppRunner(label_app(session, rater=rater), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise FairpairError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror})", key="--port",
                                hint="give another --port, or --port 0 for a free one") from None
        bound = runner.addresses[0][1] if runner.addresses else port
        from urllib.parse import quote

        announce(f"http://127.0.0.1:{bound}/" + (f"?rater={quote(rater)}" if rater else ""))
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        session.close()
