--[[
job_submit.lua shipped with wattsched (`wattsched advise`, docs/advisor.md): keeps the power cap while the
advisor is down, and holds against what a user can ask of sbatch, srun, salloc or scontrol.

At submit, outside ADMIN_UIDS (root: the advisor), every power license a job asks for is dropped (power:1,
power:0, power*3, power;power:2, power:500,power:0, any case) and replaced by the conservative default: the most
nodes the job can get x DEFAULT_WATTS_PER_NODE. Its other licenses are kept. The job is marked
"wattsched:default" in its AdminComment; "wattsched:..." markers a user wrote there are removed first. A job
whose default is above BUDGET_WATTS is held with a license of BUDGET_WATTS (marker "wattsched:oversize"), or
refused (OVERSIZE = "refuse"). In gate mode (GATE = true) every job is also held at submit (priority 0, marker
"wattsched:gate"); the advisor releases it when its predicted power fits.

On modify, a user outside ADMIN_UIDS may not change the power license, may not release a job the guard holds
(priority, or Nice, which in 22.05 lifts a hold set at submit), and may not resize a job (node count, tasks,
CPUs, partition, node list) beyond what its current power license covers at DEFAULT_WATTS_PER_NODE.

Slurm 22.05 calls slurm_job_submit once per job array (every task inherits the license) and once per component
of a heterogeneous job (each component gets its own license).

Install: copy this file next to slurm.conf (Slurm reads job_submit.lua from the folder of slurm.conf), owned by
root and mode 644, add `JobSubmitPlugins=lua` to slurm.conf, then `scontrol reconfigure`.
]]

-- The power license's name as slurm.conf (Licenses=power:W) or sacctmgr (power@server) defines it.
local LICENSE = "power"
-- Watts per node a job is assumed to draw until the advisor knows better: a node's maximum (the worst case).
local DEFAULT_WATTS_PER_NODE = 500
-- Gate mode: hold every job at submit; the advisor releases it (fails closed: jobs wait while it is down).
local GATE = false
-- Users who may set and change power licenses and release held jobs (root runs the advisor).
local ADMIN_UIDS = { [0] = true }
-- CPUs a job can use on the smallest node of each partition ("*": any partition not named), used only for jobs
-- on whole nodes (--exclusive or OverSubscribe=EXCLUSIVE). 1 never under-counts; set it to size such jobs closer.
local NODE_CPUS = { ["*"] = 1 }
-- The power budget in W (slurm.conf's license total): a job whose default is above it is held or refused.
-- nil: no check here (Slurm then refuses any license above the license's total at submit).
local BUDGET_WATTS = nil
-- What happens to a job whose default is above BUDGET_WATTS: "hold" (license BUDGET_WATTS, held for the advisor
-- or an administrator to release) or "refuse" (sbatch fails with one line saying why).
local OVERSIZE = "hold"
-- Nodes assumed for a job that states no node count (-N, -w), no task count (-n) and no job-wide TRES
-- (--gpus): nil counts its partition's node limit; 1 trusts Slurm's default of one task.
local UNSIZED_NODES = nil
-- Power domains (the advisor's [[domains]], gate mode): the advisor releases a job with an ExcNodeList that keeps
-- it inside a domain with room; users may then not change where a job may run (ExcNodeList, ReqNodeList,
-- Features) until it starts.
local DOMAINS = false

local DEFAULT_MARK = "wattsched:default"
local GATE_MARK = "wattsched:gate"
local OVERSIZE_MARK = "wattsched:oversize"

-- ---------------------------------------------------------------------------------------------- small helpers

-- Fields Slurm 22.05 keeps in 16 bits: 65534 (NO_VAL16) and 65535 (INFINITE16) are "not set" there.
local NARROW = { cpus_per_task = true, ntasks_per_node = true, pn_min_cpus = true, shared = true,
   ntasks_per_socket = true, ntasks_per_core = true, ntasks_per_board = true, ntasks_per_tres = true,
   ntasks_per_gpu = true, sockets_per_node = true, cores_per_socket = true, threads_per_core = true }

-- A count Slurm reports as set: a positive number that is none of its "no value"/"infinite" sentinels (of 32
-- bits, or of 16 bits for a NARROW field).
local function count(value, field)
   if type(value) ~= "number" or value <= 0 or value >= 4294967294 then
      return nil
   end
   if NARROW[field] and value >= 65534 then
      return nil
   end
   return value
end

local function text(value)
   if type(value) == "string" and value ~= "" then
      return value
   end
   return nil
end

local function trim(s)
   return (string.gsub(string.gsub(s, "^%s+", ""), "%s+$", ""))
end

local function has_bit(flags, bit)
   if type(flags) ~= "number" or type(bit) ~= "number" or bit <= 0 then
      return false
   end
   return math.floor(flags / bit) % 2 == 1
end

-- "wattsched" in any case, for a Lua pattern (Lua patterns have no case-insensitive flag).
local function any_case(word)
   return (string.gsub(word, "%a", function(c)
      return "[" .. string.lower(c) .. string.upper(c) .. "]"
   end))
end
local MARK_PATTERN = any_case("wattsched") .. "%s*:%S*"

-- The comment without any "wattsched:..." word: a user cannot plant the markers the advisor acts on.
local function strip_marks(comment)
   if comment == nil then
      return nil
   end
   local before
   repeat
      before = comment
      comment = string.gsub(comment, MARK_PATTERN, "")
   until comment == before
   comment = trim(string.gsub(comment, "%s+", " "))
   if comment == "" then
      return nil
   end
   return comment
end

local function plural(n, word)
   if n == 1 then
      return "1 " .. word
   end
   return tostring(n) .. " " .. word .. "s"
end

local function add_mark(comment, mark)
   if comment == nil or comment == "" then
      return mark
   end
   if string.find(comment, mark, 1, true) then
      return comment
   end
   return comment .. " " .. mark
end

-- --------------------------------------------------------------------------------------------------- licenses

-- Does one entry of a license list (Slurm splits at "," and ";"; a name ends at ":" or "*"; "|" joins
-- alternatives in later Slurm versions) name the power license? Any case and spacing, as a user may try.
local function names_power(entry)
   for alternative in string.gmatch(entry, "[^|]+") do
      local name = trim(string.match(alternative, "^[^:*]*"))
      if string.lower(name) == string.lower(LICENSE) then
         return true
      end
   end
   return false
end

-- The entries of a license list that are not the power license, and those that are.
local function split_power(licenses)
   local kept, power = {}, {}
   for entry in string.gmatch(licenses or "", "[^,;]+") do
      if names_power(entry) then
         power[#power + 1] = entry
      elseif trim(entry) ~= "" then
         kept[#kept + 1] = entry
      end
   end
   return kept, power
end

-- The power license of a list as one exact entry "LICENSE:count" (or LICENSE*count, or LICENSE alone: 1):
-- its count; false when the list has none; nil when it has several entries or one Slurm would read otherwise.
local function power_count(licenses)
   local _, power = split_power(licenses)
   if #power == 0 then
      return false
   end
   if #power > 1 then
      return nil
   end
   local entry = power[1]
   if entry == LICENSE then
      return 1
   end
   local name, digits = string.match(entry, "^([^:*]+)[:*](%d+)$")
   if name ~= LICENSE then
      return nil
   end
   return tonumber(digits)
end

-- ------------------------------------------------------------------------------------------------- node count

-- Nodes of a hostlist expression ("n[1-3,7],m2": 5); nil when it cannot be read.
local function hostlist_count(list)
   local items, item, depth = {}, "", 0
   for i = 1, #list do
      local c = string.sub(list, i, i)
      if c == "[" then
         depth = depth + 1
      elseif c == "]" then
         depth = depth - 1
      end
      if depth < 0 or depth > 1 then
         return nil
      end
      if c == "," and depth == 0 then
         items[#items + 1] = item
         item = ""
      else
         item = item .. c
      end
   end
   if depth ~= 0 then
      return nil
   end
   items[#items + 1] = item
   local total = 0
   for _, host in ipairs(items) do
      host = trim(host)
      if host ~= "" then
         local n = 1
         for ranges in string.gmatch(host, "%[([^%]]*)%]") do
            local k = 0
            for range in string.gmatch(ranges, "[^,]+") do
               local a, b = string.match(range, "^(%d+)%-(%d+)$")
               if a ~= nil and tonumber(b) >= tonumber(a) then
                  k = k + tonumber(b) - tonumber(a) + 1
               elseif string.match(range, "^%d+$") then
                  k = k + 1
               else
                  return nil
               end
            end
            n = n * k
         end
         total = total + n
      end
   end
   return total
end

-- The partitions a job may run in: those of its -p list that part_list knows, else the default partition,
-- else every partition the user may use.
local function job_partitions(partition, part_list)
   local found = {}
   if type(part_list) ~= "table" then
      return found
   end
   if partition ~= nil then
      for name in string.gmatch(partition, "[^,]+") do
         local part = part_list[trim(name)]
         if part ~= nil then
            found[#found + 1] = part
         end
      end
   end
   if #found == 0 and partition == nil then
      for _, part in pairs(part_list) do
         if part.flag_default == 1 or part.flag_default == true then
            found[#found + 1] = part
         end
      end
   end
   if #found == 0 then
      for _, part in pairs(part_list) do
         found[#found + 1] = part
      end
   end
   return found
end

-- The most nodes any of the partitions lets a job have: the partition's MaxNodes, at most its nodes.
local function partition_limit(parts)
   local limit = nil
   for _, part in ipairs(parts) do
      local nodes = count(part.total_nodes)
      local max = count(part.max_nodes)
      if max ~= nil and (nodes == nil or max < nodes) then
         nodes = max
      end
      if nodes ~= nil and (limit == nil or nodes > limit) then
         limit = nodes
      end
   end
   return limit
end

-- CPUs a whole node gives the job at least: NODE_CPUS of the partition, never above the partition's mean CPUs per
-- node (the smallest node cannot have more than the mean: the clamp can only raise a node count).
local function smallest_node_cpus(parts)
   local smallest = nil
   for _, part in ipairs(parts) do
      local cpus = NODE_CPUS[part.name] or NODE_CPUS["*"] or 1
      local total, nodes = count(part.total_cpus), count(part.total_nodes)
      if total ~= nil and nodes ~= nil and math.floor(total / nodes) < cpus then
         cpus = math.floor(total / nodes)
      end
      if smallest == nil or cpus < smallest then
         smallest = cpus
      end
   end
   if smallest == nil or smallest < 1 then
      return 1
   end
   return smallest
end

-- Options that limit how many tasks a node takes beyond its CPUs and --ntasks-per-node: with any of them a job's
-- tasks are not assumed to pack onto whole nodes.
local PACKING_LIMITS = { "ntasks_per_socket", "ntasks_per_core", "ntasks_per_board", "ntasks_per_tres",
   "ntasks_per_gpu", "sockets_per_node", "cores_per_socket", "threads_per_core", "min_mem_per_cpu" }
local PACKING_TRES = { "tres_per_job", "tres_per_task", "tres_per_socket", "cpus_per_tres", "mem_per_tres" }

local function packs(job, parts)
   if not job.whole or #parts == 0 or has_bit(job.bitflags, slurm.SPREAD_JOB) then
      return false
   end
   for _, field in ipairs(PACKING_LIMITS) do
      if count(job[field], field) ~= nil then
         return false
      end
   end
   for _, field in ipairs(PACKING_TRES) do
      if text(job[field]) ~= nil then
         return false
      end
   end
   return true
end

-- Nodes a task count fills on whole nodes: min(--ntasks-per-node, CPUs of the smallest node / CPUs per task)
-- tasks on each node (Slurm picks the fewest whole nodes that hold the job); nil when a task fits no node.
local function packed_nodes(job, parts, tasks)
   local node_cpus = smallest_node_cpus(parts)
   local per_node = math.floor(node_cpus / (count(job.cpus_per_task, "cpus_per_task") or 1))
   local tpn = count(job.ntasks_per_node, "ntasks_per_node")
   if tpn ~= nil and tpn < per_node then
      per_node = tpn
   end
   if per_node < 1 then
      return nil
   end
   local nodes = math.ceil(tasks / per_node)
   local cpus = count(job.min_cpus)
   if cpus ~= nil then
      nodes = math.max(nodes, math.ceil(cpus / node_cpus))
   end
   return nodes
end

--[[
The most nodes a job can get (job: the fields of a job_desc, or of a modify request over its job_rec):

1. a maximum node count (-N 4, -N 2-4: 4) is Slurm's own bound; the minimum or the node list when larger;
2. else a task count (-n 4): one task per node at most, so 4 nodes; on whole nodes (--exclusive or
   OverSubscribe=EXCLUSIVE), when it is fewer, the nodes the tasks fill (packed_nodes); within the partition's node
   limit, and never below the minimum node count or the node list (-w);
3. else a minimum node count or node list alone: that many (Slurm then runs one task on each);
4. else (nothing stated): UNSIZED_NODES, or the partition's node limit.

Returns the node count, the rule that gave it ("nodes", "tasks", "unsized"), or nil and why.
]]
local function most_nodes(job, part_list)
   local parts = job_partitions(job.partition, part_list)
   local limit = partition_limit(parts)
   local lower = count(job.min_nodes) or 0
   if text(job.req_nodes) ~= nil then
      local listed = hostlist_count(job.req_nodes) or limit
      if listed == nil then
         return nil, "a node list it cannot read"
      end
      lower = math.max(lower, listed)
   end
   local max_nodes = count(job.max_nodes)
   if max_nodes ~= nil then
      return math.max(max_nodes, lower), "nodes"
   end
   local tasks = count(job.num_tasks)
   if tasks ~= nil then
      local nodes = tasks
      if packs(job, parts) then
         nodes = math.min(nodes, packed_nodes(job, parts, tasks) or nodes)
      end
      if limit ~= nil and nodes > limit then
         nodes = limit
      end
      return math.max(nodes, lower, 1), "tasks"
   end
   if lower > 0 and text(job.tres_per_job) == nil then
      return lower, "nodes"
   end
   local unsized = UNSIZED_NODES or limit
   if unsized == nil then
      return nil, "no partition it may use"
   end
   return math.max(unsized, lower), "unsized"
end

-- The fields of a job that its node count depends on.
local SIZE_FIELDS = { "min_nodes", "max_nodes", "num_tasks", "cpus_per_task", "ntasks_per_node", "min_cpus",
   "pn_min_cpus", "partition", "req_nodes", "shared", "tres_per_job", "tres_per_node", "tres_per_task",
   "tres_per_socket", "cpus_per_tres", "mem_per_tres", "min_mem_per_cpu", "ntasks_per_socket", "ntasks_per_core",
   "ntasks_per_board", "ntasks_per_tres", "ntasks_per_gpu", "sockets_per_node", "cores_per_socket",
   "threads_per_core" }

local function submitted(job_desc, part_list)
   local job = { bitflags = job_desc.bitflags }
   for _, field in ipairs(SIZE_FIELDS) do
      job[field] = job_desc[field]
   end
   job.partition = text(job.partition)
   local parts = job_partitions(job.partition, part_list)
   local exclusive = #parts > 0
   for _, part in ipairs(parts) do
      if part.max_share ~= 0 then -- 0: OverSubscribe=EXCLUSIVE
         exclusive = false
      end
   end
   job.whole = job_desc.shared == 0 or exclusive -- 0: --exclusive (JOB_SHARED_NONE)
   return job
end

local function sets(job_desc, field)
   local value = job_desc[field]
   return count(value, field) ~= nil or type(value) == "string"
end

-- A modify request over the job it changes: the request's fields where it sets them, the job's elsewhere. 22.05's
-- job_rec has no task count, CPUs per task nor tasks per node: its min_cpus (tasks x CPUs per task) stands for
-- the task count, which can only over-count, and tasks are not assumed to pack.
local function modified(job_desc, job_rec)
   local job = { whole = false }
   for _, field in ipairs({ "min_nodes", "max_nodes", "min_cpus", "partition", "req_nodes", "tres_per_job" }) do
      if sets(job_desc, field) then
         job[field] = job_desc[field]
      else
         job[field] = job_rec[field]
      end
   end
   job.partition = text(job.partition)
   job.num_tasks = count(job_desc.num_tasks) or count(job_rec.num_tasks) or count(job.min_cpus)
   return job
end

local function changes_size(job_desc)
   for _, field in ipairs(SIZE_FIELDS) do
      if sets(job_desc, field) then
         return true
      end
   end
   return false
end

-- Does a modify request raise the priority of a held job (scontrol release: INFINITE; Priority=N) or set its
-- Nice (22.05 recomputes the priority of a job held at submit on a Nice change, which lifts the hold)?
local function releases(job_desc)
   local priority = job_desc.priority
   if type(priority) == "number" and priority ~= 0 and priority ~= slurm.NO_VAL then
      return true
   end
   return count(job_desc.nice) ~= nil
end

-- ------------------------------------------------------------------------------------------------ the plugin

local function guard_submit(job_desc, part_list, submit_uid)
   local admin = ADMIN_UIDS[submit_uid] == true
   local kept, asked = split_power(job_desc.licenses)
   if admin and #asked > 0 then
      -- an administrator's own power license is kept
      if GATE then
         job_desc.priority = 0
         job_desc.admin_comment = add_mark(job_desc.admin_comment, GATE_MARK)
      end
      return slurm.SUCCESS
   end
   if not admin and job_desc.admin_comment ~= nil then
      -- (a string field of job_desc cannot be set to nil: "" clears it)
      job_desc.admin_comment = strip_marks(job_desc.admin_comment) or ""
   end
   local nodes, rule = most_nodes(submitted(job_desc, part_list), part_list)
   if nodes == nil then
      slurm.log_user("wattsched: job refused: its power license cannot be sized (%s); give -N or -n", rule)
      return slurm.ERROR
   end
   local worst = nodes * DEFAULT_WATTS_PER_NODE
   local license = worst
   local held = nil
   if BUDGET_WATTS ~= nil and worst > BUDGET_WATTS then
      local reason = string.format("its worst case is %d W (%s x %d W), above the power budget of %d W", worst,
                                   plural(nodes, "node"), DEFAULT_WATTS_PER_NODE, BUDGET_WATTS)
      if OVERSIZE == "refuse" then
         slurm.log_info("wattsched: refused job %s of uid %d: %s", tostring(job_desc.name), submit_uid, reason)
         slurm.log_user("wattsched: job refused: %s; ask for fewer nodes (-N) or tasks (-n)", reason)
         return slurm.ESLURM_INVALID_LICENSES or slurm.ERROR
      end
      license = BUDGET_WATTS
      held = reason
      job_desc.priority = 0
      job_desc.admin_comment = add_mark(job_desc.admin_comment, OVERSIZE_MARK)
   end
   kept[#kept + 1] = LICENSE .. ":" .. tostring(license)
   job_desc.licenses = table.concat(kept, ",")
   job_desc.admin_comment = add_mark(job_desc.admin_comment, DEFAULT_MARK)
   if GATE then
      job_desc.priority = 0
      job_desc.admin_comment = add_mark(job_desc.admin_comment, GATE_MARK)
   end
   slurm.log_info("wattsched: job %s of uid %d gets %s:%d (%d nodes by its %s%s)", tostring(job_desc.name),
                  submit_uid, LICENSE, license, nodes, rule, held and ("; held (" .. OVERSIZE_MARK .. "): " .. held)
                  or "")
   -- one line on the user's terminal (sbatch prints it on stderr; --parsable's output is unchanged)
   local told = {}
   if #asked > 0 then
      told[#told + 1] = string.format("%s replaced by %s:%d (the site sets the %s license)",
                                      table.concat(asked, ","), LICENSE, license, LICENSE)
   end
   if rule == "unsized" and UNSIZED_NODES == nil then
      told[#told + 1] = string.format("no -N or -n given: sized as %s, the partition's limit", plural(nodes, "node"))
   end
   if held then
      told[#told + 1] = "job held: " .. held .. "; the power advisor or an administrator releases it"
   end
   if #told > 0 then
      slurm.log_user("wattsched: %s", table.concat(told, "; "))
   end
   return slurm.SUCCESS
end

local function guard_modify(job_desc, job_rec, part_list, modify_uid)
   if ADMIN_UIDS[modify_uid] then
      return slurm.SUCCESS
   end
   -- 22.05 discards log_user() in job_modify: the user sees "Access/permission denied", the log says why
   local refused = slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
   local job_id = tostring(job_rec.job_id)
   if job_desc.licenses ~= nil then
      local now, asked = power_count(job_rec.licenses), power_count(job_desc.licenses)
      if asked == nil or now == nil or asked ~= now then
         slurm.log_info("wattsched: refused uid %d the licenses %s for job %s (the %s license is the site's)",
                        modify_uid, tostring(job_desc.licenses), job_id, LICENSE)
         return refused
      end
   end
   if job_desc.admin_comment ~= nil then
      slurm.log_info("wattsched: refused uid %d a change of the AdminComment of job %s", modify_uid, job_id)
      return refused
   end
   local marks = job_rec.admin_comment or ""
   local guarded = GATE or string.find(marks, GATE_MARK, 1, true) ~= nil
      or string.find(marks, OVERSIZE_MARK, 1, true) ~= nil
   if guarded and job_rec.priority == 0 and releases(job_desc) then
      slurm.log_info("wattsched: refused uid %d the release of job %s (held for the power cap: %s)", modify_uid,
                     job_id, marks)
      return refused
   end
   if DOMAINS and (job_desc.exc_nodes ~= nil or job_desc.req_nodes ~= nil or job_desc.features ~= nil) then
      slurm.log_info("wattsched: refused uid %d a change of where job %s may run (power domains)", modify_uid,
                     job_id)
      return refused
   end
   if changes_size(job_desc) then
      local nodes = most_nodes(modified(job_desc, job_rec), part_list)
      local covered = power_count(job_rec.licenses)
      if nodes == nil or not covered or nodes * DEFAULT_WATTS_PER_NODE > covered then
         slurm.log_info("wattsched: refused uid %d a resize of job %s to %s nodes: its licenses %s cover fewer",
                        modify_uid, job_id, tostring(nodes), tostring(job_rec.licenses))
         return refused
      end
   end
   return slurm.SUCCESS
end

-- Slurm 22.05 accepts a job unchanged when the script raises an error: the guard fails closed instead.
function slurm_job_submit(job_desc, part_list, submit_uid)
   local ok, rc = pcall(guard_submit, job_desc, part_list, submit_uid)
   if ok then
      return rc
   end
   slurm.log_error("wattsched: job_submit.lua failed on a job of uid %d, refused: %s", submit_uid, tostring(rc))
   slurm.log_user("wattsched: job refused: the power guard failed (%s); tell the administrators", tostring(rc))
   return slurm.ERROR
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   local ok, rc = pcall(guard_modify, job_desc, job_rec, part_list, modify_uid)
   if ok then
      return rc
   end
   slurm.log_error("wattsched: job_submit.lua failed on a change of uid %d, refused: %s", modify_uid, tostring(rc))
   return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
end

slurm.log_info("wattsched job_submit.lua loaded (license %s, %d W per node by default, budget %s, oversize %s, gate %s)",
               LICENSE, DEFAULT_WATTS_PER_NODE, tostring(BUDGET_WATTS), OVERSIZE, tostring(GATE))
return slurm.SUCCESS
