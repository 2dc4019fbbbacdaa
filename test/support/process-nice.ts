import { readdir, readFile } from "node:fs/promises";

/** The nice value of every thread of a process (/proc/<pid>/task/<tid>/stat field 19), as a set. */
export async function threadNices(pid: number): Promise<Set<number>> {
  const nices = new Set<number>();
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8").catch(() => "");
    if (stat) nices.add(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));
  }
  return nices;
}

/** The nice value of the process's scheduler autogroup (/proc/<pid>/autogroup: "/autogroup-N nice X"). */
export async function autogroupNice(pid: number): Promise<number> {
  const line = await readFile(`/proc/${pid}/autogroup`, "utf8");
  return Number(/nice (-?\d+)/.exec(line)![1]);
}
