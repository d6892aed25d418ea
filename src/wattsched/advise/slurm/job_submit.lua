--[[
job_submit.lua shipped with wattsched (`wattsched advise`, docs/advisor.md): keeps the power cap while the
advisor is down.

At submit, every job that does not ask for the power license gets a conservative one (its largest node count x
DEFAULT_WATTS_PER_NODE) and the AdminComment marker "wattsched:default", so Slurm's own license accounting caps the
cluster even before the advisor has looked at the job. In gate mode (GATE = true) every job is also held at submit
(priority 0, marker "wattsched:gate"); the advisor releases it when its predicted power fits. On modify, a user
other than ADMIN_UIDS (root: the advisor) may not change the power license, nor, in gate mode, release the hold.

Install: copy this file next to slurm.conf (Slurm reads job_submit.lua from the folder of slurm.conf), owned by
root and mode 644, add `JobSubmitPlugins=lua` to slurm.conf, then `scontrol reconfigure`.
]]

-- The power license's name as slurm.conf (Licenses=power:W) or sacctmgr (power@server) defines it.
local LICENSE = "power"
-- Watts per node a job without a power license is assumed to draw: set it to the node's maximum (worst case).
local DEFAULT_WATTS_PER_NODE = 500
-- Gate mode: hold every job at submit; the advisor releases it (fails closed: jobs wait while it is down).
local GATE = false
-- Users who may change a job's power license and release gated jobs (root runs the advisor).
local ADMIN_UIDS = { [0] = true }

local DEFAULT_MARK = "wattsched:default"
local GATE_MARK = "wattsched:gate"

-- The count of LICENSE in a "name:count,name2:count" (or name*count) request, nil when it asks for none.
local function power_count(licenses)
   if licenses == nil or licenses == "" then
      return nil
   end
   for item in string.gmatch(licenses, "[^,]+") do
      local name, count = string.match(item, "^%s*([^:*]+)[:*](%d+)%s*$")
      if name == nil then
         name, count = string.match(item, "^%s*([^:*]+)%s*$"), "1"
      end
      if name == LICENSE then
         return tonumber(count)
      end
   end
   return nil
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

-- Slurm's "not set" for numbers in a job descriptor.
local function unset(value)
   return value == nil or value == slurm.NO_VAL or value == slurm.NO_VAL16 or value == 0
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   if power_count(job_desc.licenses) == nil then
      -- the most nodes the job may get (--nodes=2-4: 4), so the default stays the worst case
      local nodes = job_desc.max_nodes
      if unset(nodes) then
         nodes = job_desc.min_nodes
      end
      if unset(nodes) then
         nodes = 1
      end
      local default = LICENSE .. ":" .. tostring(nodes * DEFAULT_WATTS_PER_NODE)
      if job_desc.licenses == nil or job_desc.licenses == "" then
         job_desc.licenses = default
      else
         job_desc.licenses = job_desc.licenses .. "," .. default
      end
      job_desc.admin_comment = add_mark(job_desc.admin_comment, DEFAULT_MARK)
      slurm.log_info("wattsched: job %s of uid %d gets the default license %s", tostring(job_desc.name),
                     submit_uid, default)
   end
   if GATE then
      job_desc.priority = 0
      job_desc.admin_comment = add_mark(job_desc.admin_comment, GATE_MARK)
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if ADMIN_UIDS[modify_uid] then
      return slurm.SUCCESS
   end
   local refused = slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
   if job_desc.licenses ~= nil and power_count(job_desc.licenses) ~= power_count(job_rec.licenses) then
      -- 22.05 discards log_user() in job_modify: the user sees "Access/permission denied", the log says why
      slurm.log_info("wattsched: refused uid %d a change of the %s license of job %d (set by the power advisor)",
                     modify_uid, LICENSE, job_rec.job_id)
      return refused
   end
   if GATE and job_desc.priority ~= nil and job_desc.priority ~= slurm.NO_VAL and job_rec.priority == 0 then
      slurm.log_info("wattsched: refused uid %d the release of job %d (gate mode: the power advisor releases it)",
                     modify_uid, job_rec.job_id)
      return refused
   end
   return slurm.SUCCESS
end

slurm.log_info("wattsched job_submit.lua loaded (license %s, %d W per node by default, gate %s)", LICENSE,
               DEFAULT_WATTS_PER_NODE, tostring(GATE))
return slurm.SUCCESS
