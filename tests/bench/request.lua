-- wrk: one request from the environment (BENCH_METHOD, BENCH_BODY,
-- BENCH_TOKEN, BENCH_HEADERS as "Name: value|Name: value")
wrk.method = os.getenv("BENCH_METHOD") or "POST"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
	wrk.body = body
	wrk.headers["Content-Type"] = "application/json"
end
local token = os.getenv("BENCH_TOKEN")
if token and token ~= "" then
	wrk.headers["Authorization"] = "Bearer " .. token
end
local extra = os.getenv("BENCH_HEADERS")
if extra then
	for name, value in string.gmatch(extra, "([^:|]+):%s*([^|]+)") do
		wrk.headers[name] = value
	end
end

