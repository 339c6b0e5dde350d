-- SPDX-License-Identifier: MIT
--
-- Wireshark dissector for DIMMnet-2 fabric captures (dn2-switch --pcap).
--
--   wireshark -X lua_script:tools/wireshark/dimmnet2.lua cap.pcap
--   tshark -X lua_script:tools/wireshark/dimmnet2.lua -r cap.pcap -V
--
-- A capture is LINKTYPE_USER0 (147).  Each record is a 16-byte capture
-- header written by the switch, then one fabric datagram exactly as it went
-- over UDP (docs/fabric.md, "pcap records"):
--
--   capture header   version, event, flags, in/out port LID, reason, length
--   fabric header    40 bytes: magic "DN2F", version (4), type, flags, LIDs,
--                    length, sender / receiver epochs and sessions
--   DATA             the sender's timestamp (us), ACK blocks (each echoes a
--                    timestamp: the spurious-timeout detection), records
--   body             per type; DATA carries records, each one DIMMnet-2
--                    packet, decoded with the field layout of
--                    include/dimmnet2/dn2_abi.h (1st DW: size, TYPE, DTYPE,
--                    PGID, DWID, SWID, DLID, Iteration, r/e/h/l/p flags).
--
-- Filter examples:  dn2f.type == 4     dn2.dlid == 0x0002     dn2.type == 0x14
--                   dn2cap.event == 2 (dropped by fault injection)
--                   dn2f.rec.retx == 1 (retransmissions)
--                   dn2f.rec.req == 1 (RVL requests, lanes 2/3)
--                   dn2f.rec.lane == 2   dn2f.ack.lane == 3
--                   dn2f.ts   dn2f.ack.echo (timestamps, version 4)
--                   dn2f.rec.vt == 1   dn2f.rec.vtime   dn2f.vt.horizon (virtual time)
--                   dn2cap.event == 7 (a board's pcap=: delivered, virtual time)
--
-- Event 7 records are written by a board (the device's pcap= in virtual
-- time): the capture header, then a bare DIMMnet-2 packet (no fabric
-- datagram); the record's time stamp is its virtual delivery time.

-- The ABI table (see above).
local function abi_path()
    local env = os.getenv("DN2_WIRESHARK_ABI")
    if env and env ~= "" then return env end
    local src = debug.getinfo(1, "S").source or ""
    local dir = src:match("^@(.*[/\\])") or ""
    return dir .. "dimmnet2-abi.lua"
end
local abi = dofile(abi_path())

local cap = Proto("dn2cap", "DIMMnet-2 switch capture")
local fab = Proto("dn2f", "DIMMnet-2 fabric")
local pkt = Proto("dn2", "DIMMnet-2 packet")

local events = {
    [1] = "forwarded", [2] = "dropped (fault injection)", [3] = "control received",
    [4] = "control sent", [5] = "rejected (invalid)", [6] = "dropped (not forwarded)",
    [7] = "delivered to the board",
}
local reasons = {
    [0] = "-", [1] = "decode error", [2] = "unknown source", [3] = "no route",
    [4] = "not for the switch", [5] = "no LID left", [6] = "bad multicast",
    [7] = "authentication (cluster secret)",
}
local types = {
    [1] = "HELLO", [2] = "ASSIGN", [3] = "ROUTES", [4] = "DATA", [5] = "ACK",
    [6] = "KEEPALIVE", [7] = "BYE", [8] = "STATS_REQ", [9] = "STATS_RESP",
    [10] = "MCAST_JOIN", [11] = "MCAST_LEAVE", [12] = "VT_REPORT", [13] = "VT_GRANT",
}
local kinds = { [0] = "unicast", [1] = "multicast origin", [2] = "multicast copy" }
-- lane = DWID + 2 * request (docs/fabric.md, "Credits, back-pressure and lanes")
local lanes = { [0] = "data WID 0", [1] = "data WID 1", [2] = "requests WID 0",
                [3] = "requests WID 1" }
local route_modes = { [1] = "direct", [2] = "switch" }
local bye_reasons = { [0] = "leaving", [1] = "switch shutdown", [2] = "unknown (HELLO again)",
                      [3] = "refused: GUID in use", [4] = "refused: authentication",
                      [5] = "refused: no LID / host limit" }
local families = { [0] = "none", [4] = "IPv4", [6] = "IPv6" }
-- OTYPE names (dn2_abi.h enum dn2_otype) and DTYPE sizes, from the ABI table
local otypes = abi.otypes
local dtypes = {}
for d, b in pairs(abi.dtype_bytes) do dtypes[d] = string.format("%d B", b) end

-- capture header
local fc = {
    version = ProtoField.uint8("dn2cap.version", "Capture version", base.DEC),
    event = ProtoField.uint8("dn2cap.event", "Event", base.DEC, events),
    flags = ProtoField.uint8("dn2cap.flags", "Flags", base.HEX),
    dup = ProtoField.bool("dn2cap.flags.dup", "Injected duplicate", 8, nil, 0x01),
    delayed = ProtoField.bool("dn2cap.flags.delayed", "Delayed", 8, nil, 0x02),
    reordered = ProtoField.bool("dn2cap.flags.reordered", "Reordered", 8, nil, 0x04),
    in_lid = ProtoField.uint16("dn2cap.in_lid", "In port LID", base.HEX),
    out_lid = ProtoField.uint16("dn2cap.out_lid", "Out port LID", base.HEX),
    reason = ProtoField.uint16("dn2cap.reason", "Reason", base.DEC),
    length = ProtoField.uint32("dn2cap.length", "Datagram length", base.DEC),
}
cap.fields = { fc.version, fc.event, fc.flags, fc.dup, fc.delayed, fc.reordered, fc.in_lid,
               fc.out_lid, fc.reason, fc.length }

-- fabric
local ff = {
    magic = ProtoField.string("dn2f.magic", "Magic"),
    version = ProtoField.uint8("dn2f.version", "Version", base.DEC),
    type = ProtoField.uint8("dn2f.type", "Type", base.DEC, types),
    flags = ProtoField.uint16("dn2f.flags", "Flags", base.HEX),
    f_ack = ProtoField.bool("dn2f.flags.ack", "ACK block present", 16, nil, 0x0001),
    f_ackreq = ProtoField.bool("dn2f.flags.ackreq", "ACK requested", 16, nil, 0x0002),
    f_mac = ProtoField.bool("dn2f.flags.mac", "MAC trailer (cluster secret)", 16, nil, 0x0004),
    mac = ProtoField.bytes("dn2f.mac", "MAC (HMAC-SHA256, 128 bits)"),
    r_token = ProtoField.bytes("dn2f.route.token", "Token (sealed)"),
    src = ProtoField.uint16("dn2f.src", "Source LID", base.HEX),
    dst = ProtoField.uint16("dn2f.dst", "Destination LID", base.HEX),
    length = ProtoField.uint32("dn2f.length", "Length", base.DEC),
    src_epoch = ProtoField.uint64("dn2f.src_epoch", "Source epoch", base.HEX),
    dst_epoch = ProtoField.uint64("dn2f.dst_epoch", "Destination epoch", base.HEX),
    src_sess = ProtoField.uint32("dn2f.src_sess", "Source session", base.HEX),
    dst_sess = ProtoField.uint32("dn2f.dst_sess", "Destination session", base.HEX),
    ticket_time = ProtoField.uint32("dn2f.ticket.time", "Ticket time (switch s)", base.DEC),
    ticket = ProtoField.bytes("dn2f.ticket", "Join ticket"),
    token = ProtoField.bytes("dn2f.token", "Per-join token (sealed)"),
    chunk_req = ProtoField.uint16("dn2f.stats.chunk", "Chunk asked for", base.DEC),
    guid = ProtoField.uint64("dn2f.guid", "Board GUID", base.HEX),
    lid_hint = ProtoField.uint16("dn2f.lid_hint", "LID hint", base.HEX),
    lid = ProtoField.uint16("dn2f.lid", "LID", base.HEX),
    link_state = ProtoField.uint8("dn2f.link_state", "Link state (SMA [17:16])", base.DEC),
    route_mode = ProtoField.uint8("dn2f.route_mode", "Routing mode", base.DEC, route_modes),
    gen = ProtoField.uint32("dn2f.gen", "Routes generation", base.DEC),
    chunk = ProtoField.uint16("dn2f.chunk", "Chunk", base.DEC),
    nchunks = ProtoField.uint16("dn2f.nchunks", "Chunks", base.DEC),
    nroutes = ProtoField.uint16("dn2f.nroutes", "Routes", base.DEC),
    ngroups = ProtoField.uint16("dn2f.ngroups", "Groups", base.DEC),
    r_lid = ProtoField.uint16("dn2f.route.lid", "LID", base.HEX),
    r_flags = ProtoField.uint8("dn2f.route.flags", "Flags (1 = direct)", base.HEX),
    r_family = ProtoField.uint8("dn2f.route.family", "Family", base.DEC, families),
    r_port = ProtoField.uint16("dn2f.route.port", "UDP port", base.DEC),
    r_scope = ProtoField.uint32("dn2f.route.scope", "IPv6 scope", base.DEC),
    r_ip4 = ProtoField.ipv4("dn2f.route.ip4", "Address"),
    r_ip6 = ProtoField.ipv6("dn2f.route.ip6", "Address"),
    r_epoch = ProtoField.uint64("dn2f.route.epoch", "Epoch", base.HEX),
    g_group = ProtoField.uint16("dn2f.group", "Group LID", base.HEX),
    g_n = ProtoField.uint16("dn2f.group.n", "Members", base.DEC),
    g_member = ProtoField.uint16("dn2f.group.member", "Member LID", base.HEX),
    a_cum = ProtoField.uint32("dn2f.ack.cum", "Next expected seq (cumulative)", base.DEC),
    a_limit = ProtoField.uint32("dn2f.ack.limit", "Credit limit", base.DEC),
    a_nbits = ProtoField.uint16("dn2f.ack.nbits", "SACK bits", base.DEC),
    a_lane = ProtoField.uint8("dn2f.ack.lane", "Lane", base.DEC, lanes),
    a_more = ProtoField.uint8("dn2f.ack.more", "Another ACK block follows", base.DEC),
    a_sacked = ProtoField.string("dn2f.ack.sacked", "SACKed"),
    a_echo = ProtoField.uint32("dn2f.ack.echo", "Echoed timestamp (us, 0 = none)", base.DEC),
    ts = ProtoField.uint32("dn2f.ts", "Sender's timestamp (us, 0 = none)", base.DEC),
    rec = ProtoField.bytes("dn2f.rec", "Record"),
    rec_seq = ProtoField.uint32("dn2f.rec.seq", "Seq", base.DEC),
    rec_len = ProtoField.uint16("dn2f.rec.len", "Packet length", base.DEC),
    rec_kind = ProtoField.uint8("dn2f.rec.kind", "Kind", base.DEC, kinds),
    rec_flags = ProtoField.uint8("dn2f.rec.flags", "Record flags", base.HEX),
    rec_retx = ProtoField.bool("dn2f.rec.retx", "Retransmission", 8, nil, 0x01),
    rec_dwid = ProtoField.uint8("dn2f.rec.dwid", "DWID (= the packet's)", base.DEC, nil, 0x02),
    rec_req = ProtoField.bool("dn2f.rec.req", "Request lane (RVL family)", 8, nil, 0x04),
    rec_vt = ProtoField.bool("dn2f.rec.vt", "Virtual time", 8, nil, 0x08),
    rec_vtime = ProtoField.uint64("dn2f.rec.vtime", "Virtual delivery time (ns)", base.DEC),
    rec_vseq = ProtoField.uint32("dn2f.rec.vseq", "Sender's vt packet counter", base.DEC),
    vt_rseq = ProtoField.uint32("dn2f.vt.rseq", "Report sequence", base.DEC),
    vt_flags = ProtoField.uint32("dn2f.vt.flags", "Flags", base.HEX),
    vt_now = ProtoField.uint64("dn2f.vt.now", "Virtual clock (ns)", base.DEC),
    vt_earliest = ProtoField.uint64("dn2f.vt.earliest", "Earliest send (ns)", base.DEC),
    vt_horizon = ProtoField.uint64("dn2f.vt.horizon", "Horizon (ns)", base.DEC),
    vt_lookahead = ProtoField.uint32("dn2f.vt.lookahead", "Lookahead L (ns)", base.DEC),
    vt_quantum = ProtoField.uint32("dn2f.vt.quantum", "Quantum Q (ns)", base.DEC),
    vt_slowest = ProtoField.uint64("dn2f.vt.slowest", "Cluster's slowest clock (ns)", base.DEC),
    vt_reports = ProtoField.uint64("dn2f.vt.reports", "Reports", base.DEC),
    vt_grants = ProtoField.uint64("dn2f.vt.grants", "Grants", base.DEC),
    vt_boards = ProtoField.uint32("dn2f.vt.boards", "Boards in the sync set", base.DEC),
    rec_lane = ProtoField.uint8("dn2f.rec.lane", "Lane", base.DEC, lanes),
    rec_after = ProtoField.uint32("dn2f.rec.after",
        "After (deliver once the data lane of this DWID reached this seq)", base.DEC),
    rec_group = ProtoField.uint16("dn2f.rec.group", "Group LID", base.HEX),
    rec_nmemb = ProtoField.uint16("dn2f.rec.nmemb", "Members", base.DEC),
    m_lid = ProtoField.uint16("dn2f.member.lid", "Member LID", base.HEX),
    m_seq = ProtoField.uint32("dn2f.member.seq", "Member seq", base.DEC),
    m_epoch = ProtoField.uint64("dn2f.member.epoch", "Member epoch", base.HEX),
    m_ssess = ProtoField.uint32("dn2f.member.src_sess", "Copy source session", base.HEX),
    m_dsess = ProtoField.uint32("dn2f.member.dst_sess", "Copy destination session", base.HEX),
    u32a = ProtoField.uint32("dn2f.value", "Value", base.DEC),
    reason = ProtoField.uint32("dn2f.bye_reason", "Reason", base.DEC, bye_reasons),
    cookie = ProtoField.uint32("dn2f.cookie", "Cookie", base.HEX),
    nports = ProtoField.uint16("dn2f.nports", "Ports", base.DEC),
    st_u64 = ProtoField.uint64("dn2f.stat", "Counter", base.DEC),
}
local fflist = {}
for _, v in pairs(ff) do fflist[#fflist + 1] = v end
fab.fields = fflist

-- DIMMnet-2 packet header (dn2_abi.h section 5)
local fp = {
    size = ProtoField.uint16("dn2.size", "Packet Size (incl. header; 0 = 4096)", base.DEC),
    type = ProtoField.uint8("dn2.type", "TYPE", base.HEX, otypes),
    dtype = ProtoField.uint8("dn2.dtype", "DTYPE", base.DEC, dtypes),
    pgid = ProtoField.uint8("dn2.pgid", "PGID", base.DEC),
    dwid = ProtoField.uint8("dn2.dwid", "DWID", base.DEC),
    swid = ProtoField.uint8("dn2.swid", "SWID", base.DEC),
    dlid = ProtoField.uint16("dn2.dlid", "DLID", base.HEX),
    iter = ProtoField.uint8("dn2.iter", "Iteration", base.DEC),
    rflag = ProtoField.uint8("dn2.rflag", "rflag (1 = Prefetch Window)", base.DEC),
    eflag = ProtoField.uint8("dn2.eflag", "eflag (last packet)", base.DEC),
    hflag = ProtoField.uint8("dn2.hflag", "hflag (long header)", base.DEC),
    lflag = ProtoField.uint8("dn2.lflag", "lflag (LLCM / LHS)", base.DEC),
    pflag = ProtoField.uint8("dn2.pflag", "pflag (status per packet)", base.DEC),
    dw2_lo = ProtoField.uint32("dn2.dw2.lo", "2nd DW [31:0]", base.HEX),
    dw2_hi = ProtoField.uint32("dn2.dw2.hi", "2nd DW [63:32]", base.HEX),
    dw3_lo = ProtoField.uint32("dn2.dw3.total", "3rd DW [31:0] Total Transfer Size", base.DEC),
    dw3_hi = ProtoField.uint32("dn2.dw3.stride", "3rd DW [63:32] Stride / List Address", base.HEX),
    ex_otype = ProtoField.uint8("dn2.ex.otype", "4th DW OTYPE(Ex)", base.HEX, otypes),
    ex_dtype = ProtoField.uint8("dn2.ex.dtype", "4th DW DTYPE(Ex)", base.DEC, dtypes),
    ex_iter = ProtoField.uint8("dn2.ex.iter", "4th DW Iteration(Ex)", base.DEC),
    ex_arg = ProtoField.uint32("dn2.ex.arg", "4th DW Stride/List(Ex)", base.HEX),
    payload = ProtoField.bytes("dn2.payload", "Data"),
}
local fplist = {}
for _, v in pairs(fp) do fplist[#fplist + 1] = v end
pkt.fields = fplist

-- Field f = { hi, lo } of the 64-bit line v (UInt64); a Lua number.
local function bits(v, f)
    local hi, lo = f[1], f[2]
    local mask = UInt64(1):lshift(hi - lo + 1) - 1
    return v:rshift(lo):band(mask):tonumber()
end

local function hdr_lines(t)
    return abi.hdr_lines[t] or 2
end

-- What the 2nd DW's halves mean per TYPE (dn2_abi.h, "How the 2nd/3rd DW
-- are used").
local op = abi.op
local function dw2_meaning(ty)
    if ty == op.RVS then return "Initial DSTOff", "DSTOff of this packet"
    elseif ty == op.RVSS or ty == op.RVSI then return "Initial DSTOff", "index of the first element"
    elseif ty == op.RVL or ty == op.RVLS or ty == op.RVLI then
        return "SRCOff on the responder", "DSTOff on the requester"
    elseif abi.msg[ty] then return "message bytes", "byte offset in the message"
    end
    return "", ""
end

-- One DIMMnet-2 packet in tvb range r; returns a summary string.
local function dissect_packet(r, tree)
    local len = r:len()
    local t = tree:add(pkt, r)
    if len < abi.line then
        t:add_expert_info(PI_MALFORMED, PI_ERROR, "shorter than the 1st DW")
        return "short"
    end
    local L = abi.line
    local w = r:range(0, L):le_uint64()
    local dw = r:range(0, L)
    local h0 = abi.h0
    local size, ty, dl = bits(w, h0.size), bits(w, h0.type), bits(w, h0.dlid)
    t:add(fp.size, dw, size)
    t:add(fp.type, dw, ty)
    t:add(fp.dtype, dw, bits(w, h0.dtype))
    t:add(fp.pgid, dw, bits(w, h0.pgid))
    t:add(fp.dwid, dw, bits(w, h0.dwid))
    t:add(fp.swid, dw, bits(w, h0.swid))
    t:add(fp.dlid, dw, dl)
    t:add(fp.iter, dw, bits(w, h0.iter))
    t:add(fp.rflag, dw, bits(w, h0.rflag))
    t:add(fp.eflag, dw, bits(w, h0.eflag))
    t:add(fp.hflag, dw, bits(w, h0.hflag))
    t:add(fp.lflag, dw, bits(w, h0.lflag))
    t:add(fp.pflag, dw, bits(w, h0.pflag))
    local lines = hdr_lines(ty)
    if len >= 2 * L then
        local x = r:range(L, L):le_uint64()
        local lo, hi = dw2_meaning(ty)
        local a = t:add(fp.dw2_lo, r:range(L, L), bits(x, abi.h1.lo))
        if lo ~= "" then a:append_text(" (" .. lo .. ")") end
        local b = t:add(fp.dw2_hi, r:range(L, L), bits(x, abi.h1.hi))
        if hi ~= "" then b:append_text(" (" .. hi .. ")") end
    end
    if lines >= 3 and len >= 3 * L then
        local x = r:range(2 * L, L):le_uint64()
        t:add(fp.dw3_lo, r:range(2 * L, L), bits(x, abi.h2.total))
        t:add(fp.dw3_hi, r:range(2 * L, L), bits(x, abi.h2.stride))
    end
    if lines >= 4 and len >= 4 * L then
        local x = r:range(3 * L, L):le_uint64()
        local xr = r:range(3 * L, L)
        t:add(fp.ex_otype, xr, bits(x, abi.ex.otype))
        t:add(fp.ex_dtype, xr, bits(x, abi.ex.dtype))
        t:add(fp.ex_iter, xr, bits(x, abi.ex.iter))
        t:add(fp.ex_arg, xr, bits(x, abi.ex.arg))
    end
    local hl = lines * L
    if len > hl then
        t:add(fp.payload, r:range(hl, len - hl))
    end
    local name = otypes[ty] or string.format("0x%02x", ty)
    t:append_text(string.format(", %s to DLID 0x%04x, %d bytes", name, dl, len))
    return name
end

local function add_addr(t, r, fam)
    if fam == 4 then
        t:add(ff.r_ip4, r:range(0, 4))
    elseif fam == 6 then
        t:add(ff.r_ip6, r:range(0, 16))
    end
end

-- One ACK block (lane, cumulative point, credit limit, echoed timestamp,
-- SACK bitmap): 16 bytes + the bitmap.
local ACK_HDR = 16
local function dissect_ack1(r, off, tree)
    local t = tree:add(fab, r:range(off, ACK_HDR), "ACK block")
    t:add_le(ff.a_cum, r:range(off, 4))
    t:add_le(ff.a_limit, r:range(off + 4, 4))
    t:add_le(ff.a_nbits, r:range(off + 8, 2))
    t:add(ff.a_lane, r:range(off + 10, 1))
    t:add(ff.a_more, r:range(off + 11, 1))
    t:add_le(ff.a_echo, r:range(off + 12, 4))
    local cum = r:range(off, 4):le_uint()
    local nbits = r:range(off + 8, 2):le_uint()
    local lane = r:range(off + 10, 1):uint()
    local more = r:range(off + 11, 1):uint() == 1
    t:append_text(string.format(" lane %d", lane))
    if nbits > 0 and off + ACK_HDR + nbits / 8 <= r:len() then
        local s = {}
        for i = 0, nbits - 1 do
            local byte = r:range(off + ACK_HDR + math.floor(i / 8), 1):uint()
            if bit32.band(bit32.rshift(byte, i % 8), 1) == 1 then
                s[#s + 1] = tostring(cum + 1 + i)
                if #s >= 64 then s[#s + 1] = "..." break end
            end
        end
        t:add(ff.a_sacked, r:range(off + ACK_HDR, nbits / 8), table.concat(s, " "))
    end
    return off + ACK_HDR + nbits / 8, more,
           string.format("L%d cum %d lim %d echo %d", lane, cum, r:range(off + 4, 4):le_uint(),
                         r:range(off + 12, 4):le_uint())
end

-- The ACK blocks of a datagram (one per lane, chained by the "more" byte).
local function dissect_ack(r, off, tree)
    local parts, more = {}, true
    local s
    while more and #parts < 4 and off + ACK_HDR <= r:len() do
        off, more, s = dissect_ack1(r, off, tree)
        parts[#parts + 1] = s
    end
    return off, table.concat(parts, "; ")
end

local function dissect_fabric(r, pinfo, tree)
    local len = r:len()
    local t = tree:add(fab, r)
    if len < 40 or r:range(0, 4):string() ~= "DN2F" then
        t:add_expert_info(PI_MALFORMED, PI_WARN, "not a fabric datagram")
        return "invalid"
    end
    t:add(ff.magic, r:range(0, 4))
    t:add(ff.version, r:range(4, 1))
    t:add(ff.type, r:range(5, 1))
    local fl = t:add_le(ff.flags, r:range(6, 2))
    fl:add_le(ff.f_ack, r:range(6, 2))
    fl:add_le(ff.f_ackreq, r:range(6, 2))
    fl:add_le(ff.f_mac, r:range(6, 2))
    if bit32.band(r:range(6, 2):le_uint(), 4) == 4 and len >= 56 then
        t:add(ff.mac, r:range(len - 16, 16))
        r = r:range(0, len - 16)    -- the body ends before the trailer
        len = len - 16
    end
    t:add_le(ff.src, r:range(8, 2))
    t:add_le(ff.dst, r:range(10, 2))
    t:add_le(ff.length, r:range(12, 4))
    t:add_le(ff.src_epoch, r:range(16, 8))
    t:add_le(ff.dst_epoch, r:range(24, 8))
    t:add_le(ff.src_sess, r:range(32, 4))
    t:add_le(ff.dst_sess, r:range(36, 4))
    local ty = r:range(5, 1):uint()
    local flags = r:range(6, 2):le_uint()
    local src, dst = r:range(8, 2):le_uint(), r:range(10, 2):le_uint()
    local tname = types[ty] or "?"
    local info = string.format("%s 0x%04x -> 0x%04x", tname, src, dst)
    t:append_text(", " .. info)
    local o = 40
    local ok, err = pcall(function()
        if ty == 1 and len >= o + 48 then
            t:add_le(ff.guid, r:range(o, 8))
            t:add_le(ff.lid_hint, r:range(o + 8, 2))
            info = info .. string.format(" guid %s", r:range(o, 8):le_uint64():tohex())
        elseif ty == 2 and len >= o + 48 then
            t:add_le(ff.guid, r:range(o, 8))
            t:add_le(ff.lid, r:range(o + 8, 2))
            t:add(ff.link_state, r:range(o + 10, 1))
            t:add(ff.route_mode, r:range(o + 11, 1))
            t:add_le(ff.ticket_time, r:range(o + 12, 4))
            t:add(ff.ticket, r:range(o + 16, 16))
            t:add(ff.token, r:range(o + 32, 16))
            info = info .. string.format(" LID 0x%04x", r:range(o + 8, 2):le_uint())
        elseif ty == 3 and len >= o + 16 then
            t:add_le(ff.gen, r:range(o, 4))
            t:add_le(ff.chunk, r:range(o + 4, 2))
            t:add_le(ff.nchunks, r:range(o + 6, 2))
            t:add_le(ff.nroutes, r:range(o + 8, 2))
            t:add_le(ff.ngroups, r:range(o + 10, 2))
            local nr, ng = r:range(o + 8, 2):le_uint(), r:range(o + 10, 2):le_uint()
            info = info .. string.format(" gen %d, %d routes, %d groups", r:range(o, 4):le_uint(), nr, ng)
            o = o + 16
            for _ = 1, nr do
                if o + 52 > len then break end
                local e = t:add(fab, r:range(o, 52), string.format("Route LID 0x%04x", r:range(o, 2):le_uint()))
                e:add_le(ff.r_lid, r:range(o, 2))
                e:add(ff.r_flags, r:range(o + 2, 1))
                e:add(ff.r_family, r:range(o + 3, 1))
                e:add_le(ff.r_port, r:range(o + 4, 2))
                e:add_le(ff.r_scope, r:range(o + 8, 4))
                add_addr(e, r:range(o + 12, 16), r:range(o + 3, 1):uint())
                e:add_le(ff.r_epoch, r:range(o + 28, 8))
                e:add(ff.r_token, r:range(o + 36, 16))
                o = o + 52
            end
            for _ = 1, ng do
                if o + 4 > len then break end
                local n = r:range(o + 2, 2):le_uint()
                local gl = 4 + 2 * n
                gl = gl + (4 - gl % 4) % 4
                if o + gl > len then break end
                local e = t:add(fab, r:range(o, gl), string.format("Group 0x%04x", r:range(o, 2):le_uint()))
                e:add_le(ff.g_group, r:range(o, 2))
                e:add_le(ff.g_n, r:range(o + 2, 2))
                for j = 0, n - 1 do
                    e:add_le(ff.g_member, r:range(o + 4 + 2 * j, 2))
                end
                o = o + gl
            end
        elseif ty == 4 or ty == 5 then
            if ty == 4 and len >= o + 4 then
                t:add_le(ff.ts, r:range(o, 4))
                info = info .. string.format(" ts %d", r:range(o, 4):le_uint())
                o = o + 4
            end
            if ty == 5 or bit32.band(flags, 1) == 1 then
                local s
                o, s = dissect_ack(r, o, t)
                info = info .. " [" .. s .. "]"
            end
            local n, seqs, pnames = 0, {}, {}
            while ty == 4 and o + 8 <= len do
                local seq, plen = r:range(o, 4):le_uint(), r:range(o + 4, 2):le_uint()
                local kind, rf = r:range(o + 6, 1):uint(), r:range(o + 7, 1):uint()
                local extra = 0
                local req = bit32.band(rf, 4) == 4
                local lane = bit32.band(rf, 2) / 2 + (req and 2 or 0)
                local vt = bit32.band(rf, 8) == 8
                if kind == 1 then extra = 4 + 24 * r:range(o + 10, 2):le_uint()
                elseif kind == 2 then extra = 4
                elseif req then extra = 4 end
                local vto = o + 8 + extra  -- the virtual-time part, after the kind's
                if vt then extra = extra + 16 end
                local padded = plen + (4 - plen % 4) % 4
                local total = 8 + extra + padded
                if o + total > len then
                    t:add_expert_info(PI_MALFORMED, PI_ERROR, "truncated record")
                    break
                end
                local e = t:add(fab, r:range(o, total),
                    string.format("Record lane %d seq %d, %s, %d bytes%s%s%s", lane,
                                  seq, kinds[kind] or "?", plen,
                                  req and string.format(", after data seq %d",
                                                        r:range(o + 8, 4):le_uint()) or "",
                                  vt and string.format(", vtime %s vseq %d",
                                                       tostring(r:range(vto, 8):le_uint64()),
                                                       r:range(vto + 8, 4):le_uint()) or "",
                                  bit32.band(rf, 1) == 1 and " (retransmission)" or ""))
                e:add_le(ff.rec_seq, r:range(o, 4))
                e:add_le(ff.rec_len, r:range(o + 4, 2))
                e:add(ff.rec_kind, r:range(o + 6, 1))
                local rfi = e:add(ff.rec_flags, r:range(o + 7, 1))
                rfi:add(ff.rec_retx, r:range(o + 7, 1))
                rfi:add(ff.rec_dwid, r:range(o + 7, 1))
                rfi:add(ff.rec_req, r:range(o + 7, 1))
                rfi:add(ff.rec_vt, r:range(o + 7, 1))
                e:add(ff.rec_lane, r:range(o + 7, 1), lane)
                if kind == 0 and req then
                    e:add_le(ff.rec_after, r:range(o + 8, 4))
                end
                if kind == 1 or kind == 2 then
                    e:add_le(ff.rec_group, r:range(o + 8, 2))
                end
                if kind == 1 then
                    local nm = r:range(o + 10, 2):le_uint()
                    e:add_le(ff.rec_nmemb, r:range(o + 10, 2))
                    for j = 0, nm - 1 do
                        local mo = o + 12 + 24 * j
                        local m = e:add(fab, r:range(mo, 24), string.format("Member 0x%04x seq %d",
                            r:range(mo, 2):le_uint(), r:range(mo + 4, 4):le_uint()))
                        m:add_le(ff.m_lid, r:range(mo, 2))
                        m:add_le(ff.m_seq, r:range(mo + 4, 4))
                        m:add_le(ff.m_epoch, r:range(mo + 8, 8))
                        m:add_le(ff.m_ssess, r:range(mo + 16, 4))
                        m:add_le(ff.m_dsess, r:range(mo + 20, 4))
                    end
                end
                if vt then
                    e:add_le(ff.rec_vtime, r:range(vto, 8))
                    e:add_le(ff.rec_vseq, r:range(vto + 8, 4))
                end
                pnames[#pnames + 1] = dissect_packet(r:range(o + 8 + extra, plen), e)
                seqs[#seqs + 1] = seq
                n = n + 1
                o = o + total
            end
            if ty == 4 then
                local first, last = seqs[1] or 0, seqs[#seqs] or 0
                info = info .. string.format(" %d pkt%s seq %d..%d %s", n, n == 1 and "" or "s",
                                             first, last, table.concat(pnames, ",", 1, math.min(#pnames, 4)))
                if #pnames > 4 then info = info .. ",..." end
            end
        elseif ty == 6 and len >= o + 32 then
            t:add_le(ff.gen, r:range(o, 4))
            if r:range(o + 8, 8):le_uint64() ~= UInt64(0) then
                t:add_le(ff.ticket_time, r:range(o + 4, 4))
                t:add_le(ff.guid, r:range(o + 8, 8))
                t:add(ff.ticket, r:range(o + 16, 16))
                info = info .. " (returns its join ticket)"
            end
        elseif ty == 8 and len >= o + 8 then
            t:add_le(ff.cookie, r:range(o, 4))
            t:add_le(ff.chunk_req, r:range(o + 4, 2))
        elseif ty == 7 and len >= o + 8 then
            t:add_le(ff.reason, r:range(o, 4))
            info = info .. " " .. (bye_reasons[r:range(o, 4):le_uint()] or "?")
        elseif ty == 9 and len >= o + 80 then
            t:add_le(ff.cookie, r:range(o, 4))
            t:add_le(ff.chunk, r:range(o + 4, 2))
            t:add_le(ff.nchunks, r:range(o + 6, 2))
            t:add_le(ff.nports, r:range(o + 8, 2))
            t:add(ff.route_mode, r:range(o + 10, 1))
            t:add_le(ff.gen, r:range(o + 12, 4))
            if bit32.band(r:range(o + 11, 1):uint(), 1) == 1 and len >= o + 112 then
                local v = t:add(fab, r:range(o + 80, 32), "Virtual time")
                v:add_le(ff.vt_reports, r:range(o + 80, 8))
                v:add_le(ff.vt_grants, r:range(o + 88, 8))
                v:add_le(ff.vt_slowest, r:range(o + 96, 8))
                v:add_le(ff.vt_boards, r:range(o + 104, 4))
            end
        elseif ty == 12 and len >= o + 32 then
            t:add_le(ff.vt_rseq, r:range(o, 4))
            t:add_le(ff.vt_flags, r:range(o + 4, 4))
            t:add_le(ff.vt_now, r:range(o + 8, 8))
            t:add_le(ff.vt_earliest, r:range(o + 16, 8))
            info = info .. string.format(" rseq %d now %s earliest %s", r:range(o, 4):le_uint(),
                                         tostring(r:range(o + 8, 8):le_uint64()),
                                         tostring(r:range(o + 16, 8):le_uint64()))
        elseif ty == 13 and len >= o + 40 then
            t:add_le(ff.vt_rseq, r:range(o, 4))
            t:add_le(ff.vt_flags, r:range(o + 4, 4))
            t:add_le(ff.vt_horizon, r:range(o + 8, 8))
            t:add_le(ff.vt_lookahead, r:range(o + 16, 4))
            t:add_le(ff.vt_quantum, r:range(o + 20, 4))
            t:add_le(ff.vt_slowest, r:range(o + 24, 8))
            info = info .. string.format(" rseq %d horizon %s", r:range(o, 4):le_uint(),
                                         tostring(r:range(o + 8, 8):le_uint64()))
        elseif (ty == 10 or ty == 11) and len >= o + 8 then
            t:add_le(ff.g_group, r:range(o, 2))
            info = info .. string.format(" group 0x%04x", r:range(o, 2):le_uint())
        end
    end)
    if not ok then
        t:add_expert_info(PI_MALFORMED, PI_ERROR, "dissector: " .. tostring(err))
    end
    return info
end

function cap.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "DIMMnet-2"
    local len = tvb:len()
    if len < 16 then
        return 0
    end
    local t = tree:add(cap, tvb:range(0, 16))
    t:add(fc.version, tvb:range(0, 1))
    t:add(fc.event, tvb:range(1, 1))
    local fl = t:add(fc.flags, tvb:range(2, 1))
    fl:add(fc.dup, tvb:range(2, 1))
    fl:add(fc.delayed, tvb:range(2, 1))
    fl:add(fc.reordered, tvb:range(2, 1))
    t:add_le(fc.in_lid, tvb:range(4, 2))
    t:add_le(fc.out_lid, tvb:range(6, 2))
    local reason = tvb:range(8, 2):le_uint()
    t:add_le(fc.reason, tvb:range(8, 2)):append_text(" (" .. (reasons[bit32.band(reason, 0xff)] or "?") .. ")")
    t:add_le(fc.length, tvb:range(12, 4))
    local ev = tvb:range(1, 1):uint()
    local prefix = ""
    if ev == 2 then prefix = "[DROPPED] "
    elseif ev == 5 then prefix = "[INVALID] "
    elseif ev == 6 then prefix = "[NOT FORWARDED] " end
    local fls = tvb:range(2, 1):uint()
    if bit32.band(fls, 1) == 1 then prefix = prefix .. "[DUP] " end
    if bit32.band(fls, 4) == 4 then prefix = prefix .. "[REORDERED] " end
    if bit32.band(fls, 2) == 2 then prefix = prefix .. "[DELAYED] " end
    pinfo.cols.src = string.format("0x%04x", tvb:range(4, 2):le_uint())
    pinfo.cols.dst = string.format("0x%04x", tvb:range(6, 2):le_uint())
    local info = "(empty)"
    if ev == 7 and len > 16 then
        -- a board's trace: the bare DIMMnet-2 packet it delivered
        prefix = prefix .. "[DELIVERED] "
        info = dissect_packet(tvb:range(16, len - 16), tree)
    elseif len > 16 then
        info = dissect_fabric(tvb:range(16, len - 16), pinfo, tree)
    end
    pinfo.cols.info = prefix .. info
    return len
end

local encaps = wtap_encaps or wtap
DissectorTable.get("wtap_encap"):add(encaps.USER0, cap)
