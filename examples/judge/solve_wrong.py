# Function-style submission with a bug: returns the values, not the indices.


def solve(nums, target):
    for i, a in enumerate(nums):
        for b in nums[i + 1:]:
            if a + b == target:
                return [a, b]
    return None


def mean(xs):
    return sum(xs) // len(xs)


def stats(xs):
    return {"min": min(xs), "max": max(xs), "mean": mean(xs)}
