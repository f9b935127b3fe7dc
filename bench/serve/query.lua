-- wrk: POST /v1/query with the body in the file named by $QUERY_BODY (a stored document's
-- signature, as GET /v1/documents/{id} gives it).
local file = assert(io.open(os.getenv("QUERY_BODY"), "r"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
