from rubricflow import parse_rubric


def test_minimal_native_rubric_loads() -> None:
    rubric = parse_rubric({"id": "r", "criteria": [{"id": "c"}]})
    assert rubric.criteria[0].kind == "binary"
    assert rubric.version == "1.0.0"
