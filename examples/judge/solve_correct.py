# Function-style submission: the judge calls solve() with JSON arguments.


def solve(nums, target):
    """Indices of the two numbers that add up to target."""
    seen = {}
    for i, n in enumerate(nums):
        if target - n in seen:
            return [seen[target - n], i]
        seen[n] = i
    return None


def mean(xs):
    return sum(xs) / len(xs)


def stats(xs):
    return {"min": min(xs), "max": max(xs), "mean": mean(xs)}


if __name__ == "__main__":
    print(solve([2, 7, 11, 15], 9))
