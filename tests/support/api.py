"""What API tests send: two owners' bearer headers, a minimal job body, and one tool (a
weather lookup) as the OpenAI and the Anthropic APIs declare it."""

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}
BODY = {"operation": "summarise", "input": {"prompt": "hello"}}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
CLAUDE_WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": WEATHER["function"]["parameters"],
}
