-- wrk script of the benchmarks: POSTs one JSON log entry per request with
-- Content-Type application/json, the Origin of the bench project and a
-- distinct X-Forwarded-For per request (10.x.y.z, from a per-thread counter).
-- The addresses are header values only: wrk connects to the URL it is given.
--
-- Arguments after "--": <body> <offset> <threads> [<delay>]
--   body     the JSON entry sent by every request, or @FILE: the entries of
--            FILE, one per line, taken in turn
--   offset   first address number of this run, so that runs do not reuse addresses
--   threads  the -t value, the stride between the numbers of one thread
--   delay    milliseconds each connection waits before its next request
--            (0 or absent: none), which sets the offered rate
-- Thread k sends offset+k, offset+k+threads, ... modulo 2^24.

local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

local function read_bodies(arg)
  if string.sub(arg, 1, 1) ~= "@" then return { arg } end
  local list = {}
  for line in io.lines(string.sub(arg, 2)) do
    if line ~= "" then list[#list + 1] = line end
  end
  return list
end

function init(args)
  bodies = read_bodies(args[1])
  offset = tonumber(args[2]) or 0
  stride = tonumber(args[3]) or 1
  count = 0
  headers = {
    ["Content-Type"] = "application/json",
    ["Origin"] = "https://bench.example",
  }
  local pause = tonumber(args[4]) or 0
  if pause > 0 then
    delay = function() return pause end
  end
end

function request()
  local n = (offset + id + count * stride) % 16777216
  count = count + 1
  headers["X-Forwarded-For"] = string.format(
    "10.%d.%d.%d", math.floor(n / 65536), math.floor(n / 256) % 256, n % 256)
  return wrk.format("POST", nil, headers, bodies[n % #bodies + 1])
end
