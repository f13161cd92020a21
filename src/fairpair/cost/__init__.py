"""Cost before sending: the tokens an audit will use per stage, priced live and in batch.

:func:`estimate_cost` renders the battery's cases and the measures' judge prompts as they would be
sent and counts their tokens (:mod:`fairpair.cost._tokens`: a model's own tokenizer only where it ships
inside an installed package, else characters / 4, labelled); :func:`load_prices` reads the user's
``prices.yaml`` (strict, errors with file, line and key). ``fairpair plan --cost`` prints the estimate;
``fairpair run`` asks before sending an audit estimated above the table's ``confirm_above``.
"""

from fairpair.cost._estimate import DEFAULT_OUTPUT_TOKENS, CostEstimate, StageCost, estimate_cost, model_of
from fairpair.cost._prices import LoadedPrices, ModelPrice, Price, PriceTable, load_prices
from fairpair.cost._tokens import APPROXIMATE, CharsPerToken, LocalTokenizer, TokenCounter, counter_for

__all__ = ["APPROXIMATE", "DEFAULT_OUTPUT_TOKENS", "CharsPerToken", "CostEstimate", "LoadedPrices", "LocalTokenizer",
           "ModelPrice", "Price", "PriceTable", "StageCost", "TokenCounter", "counter_for", "estimate_cost",
           "load_prices", "model_of"]
