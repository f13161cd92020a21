"""A provider's batch API on your machine (127.0.0.1 only), to try ``fairpair run --batch`` without an account.

    python examples/batch/server.py                  # the OpenAI Batch API on http://127.0.0.1:8790/v1
    python examples/batch/server.py 8791 --anthropic # Anthropic's Message Batches instead

It answers as the ``mock`` target does (``fairpair.testing.serve_batch_api`` /
``serve_anthropic_api``: the loopback servers of fairpair's own tests), and a request whose ``model``
starts with ``judge`` as a scripted judge that gives every answer the same scores. A batch is done
when it is first asked about (a provider takes minutes to hours), so each ``fairpair run`` after
the first finds the last one done. Stop it with Ctrl-C;
what it holds is lost, what fairpair stored is not.
"""

from __future__ import annotations

import sys
import threading


def serve(port: int = 8790, *, anthropic: bool = False, ready=print) -> None:
    """Serve the batch API on ``127.0.0.1:port`` (0: a free one) until interrupted; ``ready`` gets the
    ``base_url`` a battery's ``openai`` target takes (for ``anthropic``, the URL without ``/v1``)."""
    from fairpair.testing import BatchBehaviour, names_table, serve_anthropic_api, serve_batch_api

    start = serve_anthropic_api if anthropic else serve_batch_api
    with start(BatchBehaviour(), names=names_table(), mock={"language": "en"},
               port=port) as (server, _api):
        url = server.base_url.removesuffix("/v1") if anthropic else server.base_url
        ready(f"serving the {'Anthropic Message Batches' if anthropic else 'OpenAI Batch'} API on {url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--anthropic"]
    serve(int(args[0]) if args else 8790, anthropic="--anthropic" in sys.argv[1:])
