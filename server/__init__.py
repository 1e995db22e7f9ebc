"""formwork.server: the OpenAI-compatible HTTP API (`formwork serve`).

    formwork serve [--model DIR] [--host 127.0.0.1] [--port 8000] [--api-key KEY] ...

Routes: `POST /v1/completions`, `POST /v1/chat/completions` (streaming as server-sent events),
`GET /v1/models`, `GET /health` (503 once the engine has died), `GET /metrics` (Prometheus text with
vLLM's metric names). Constraints come from `response_format` (`json_schema`, `json_object`) or the
`structured_outputs` extension (`json`, `regex`, `choice`, `grammar`) and are compiled before admission,
so a bad one is a 400 naming the keyword and JSON pointer.

Modules: `protocol` (request parsing), `constraints`, `responses` and `streaming` (response bodies and
SSE chunks), `errors` (OpenAI error objects), `engine_client` (the engine as the routes see it), `app`
(routes), `metrics`, `auth`, `serve_cmd` (the CLI command).
"""
