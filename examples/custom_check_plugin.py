"""Add a check function through a plugin and use it in a rubric built in code.

Run from anywhere: python examples/custom_check_plugin.py
"""

import asyncio

from rubricflow import CheckResult, Target, create_plugin_manager, evaluate, hookimpl, parse_rubric


class HouseStylePlugin:
    """A plugin is any object with @hookimpl methods; packages ship them via entry points."""

    @hookimpl
    def rubricflow_check_functions(self):
        return {"house_style.no_exclamations": no_exclamations}


def no_exclamations(target: Target, limit: int = 0) -> CheckResult:
    count = target.text.count("!")
    return CheckResult(count <= limit, [f"{count} exclamation mark(s), limit {limit}"])


RUBRIC = parse_rubric(
    {
        "id": "house-style",
        "version": "1.2.0",
        "pass_threshold": 0.75,
        "criteria": [
            {
                "id": "calm",
                "description": "At most one exclamation mark.",
                "weight": 0.5,
                "scoring": {
                    "method": "deterministic",
                    "function": "house_style.no_exclamations",
                    "config": {"limit": 1},
                },
            },
            {
                "id": "short",
                "description": "At most 30 words.",
                "weight": 0.5,
                "scoring": {
                    "method": "deterministic",
                    "function": "word_count_between",
                    "config": {"max": 30},
                },
            },
        ],
    }
)


async def main() -> None:
    plugins = create_plugin_manager(plugins=[HouseStylePlugin()])
    for text in ("Your order shipped today.", "Amazing!!! Your order shipped!!!"):
        evaluation = await evaluate(RUBRIC, text, plugins=plugins)
        calm = evaluation.criterion("calm")
        assert calm is not None
        print(f"{text!r}: {evaluation.verdict} {evaluation.score:.2f} | {calm.evidence[0]}")


if __name__ == "__main__":
    asyncio.run(main())
