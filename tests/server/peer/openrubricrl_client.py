"""OpenRubricRL 0.1.0's own request and response models, driven against a rubricflow
server. Runs in a venv holding openrubricrl 0.1.0 and pydantic 1 (what its code needs),
nothing of rubricflow. Reads {"url", "token", "rubric"} as JSON on stdin and prints what
the server answered, as parsed by openrubricrl's models, as one JSON line.

openrubricrl's package root imports its LLM clients (openai, anthropic) and its server
(fastapi); a client needs none of them, so `openrubricrl/api/models.py` is loaded from
the installed package by its path."""

import importlib.util
import json
import sys
import urllib.request

import pydantic


def models():
    package = importlib.util.find_spec("openrubricrl")
    folder = package.submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location(
        "openrubricrl_api_models", f"{folder}/api/models.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def post(url, token, body):
    request = urllib.request.Request(
        url,
        data=body.encode("utf-8"),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.read().decode("utf-8")


def main():
    given = json.load(sys.stdin)
    api = models()
    base, token, rubric = given["url"], given["token"], given["rubric"]
    one = api.ScoreRequest(
        task_input="Write a function to add two numbers",
        model_output="def add(a, b): return a + b",
    )
    score = api.ScoreResponse.parse_raw(post(f"{base}/score/{rubric}", token, one.json()))
    many = api.BatchScoreRequest(
        items=[
            {"task_input": "add", "model_output": "def add(a, b): return a + b"},
            {"task_input": "sub", "model_output": "def sub(a, b): return a - b"},
        ]
    )
    batch = api.BatchScoreResponse.parse_raw(
        post(f"{base}/batch-score/{rubric}", token, many.json())
    )
    print(
        json.dumps(
            {"pydantic": pydantic.VERSION, "score": score.dict(), "batch": batch.dict()},
            default=str,
        )
    )


if __name__ == "__main__":
    main()
