// The v2 lane's Node function: holds a request open in a child with a unique command line
// (so the lane finds the request's cgroup), or runs out of memory.
const childProcess = require('child_process');
const fs = require('fs');

exports.main = async (event) => {
  const op = (event && event.op) || 'cg';
  if (op === 'oom') {
    const blobs = [];
    for (let i = 0; i < 64; ++i) blobs.push(Buffer.alloc(8 << 20, 1));  // 512M, past 64M
    return { len: blobs.length };
  }
  if (op === 'hold') childProcess.execFileSync('/bin/sleep', [event.sleep]);
  return { cgroup: fs.readFileSync('/proc/self/cgroup', 'utf8').trim() };
};
