import { Redis } from "ioredis";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { uniqueName } from "../support/isolation.ts";

describe("real stores (FerretDB as the MongoDB server, Redis)", () => {
  let mongo: MongoClient;
  let redis: Redis;
  beforeAll(async () => {
    mongo = new MongoClient(inject("mongoUrl"), { serverSelectionTimeoutMS: 10_000 });
    await mongo.connect();
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1, lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    await mongo.close();
    redis.disconnect();
  });

  it("writes a document through the mongodb driver and reads the same document back from FerretDB", async () => {
    const db = mongo.db(uniqueName("smoke"));
    const doc = { _id: "run-1", tenantId: "tenant-a", seq: 42, steps: ["a", "b"] };
    await db.collection<typeof doc>("runs").insertOne(doc);
    expect(await db.collection<typeof doc>("runs").findOne({ _id: "run-1" })).toEqual(doc);
    await expect(db.collection<typeof doc>("runs").insertOne(doc)).rejects.toMatchObject({ code: 11000 });
    await db.dropDatabase();
  });

  it("writes a key through ioredis and reads it back from Redis", async () => {
    const key = `${uniqueName("smoke")}:k`;
    await redis.set(key, "v1", "EX", 60);
    expect(await redis.get(key)).toBe("v1");
    expect(await redis.ttl(key)).toBeGreaterThan(0);
    await redis.del(key);
  });
});
