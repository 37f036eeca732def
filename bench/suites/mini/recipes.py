"""mini/recipes -- helpful: a casual home-cooking forum.

Generator: a lower-case forum question about making a dish ("any tips for a good risotto?"); the
chosen reply names the dish's key ingredient or technique without naming the dish ("arborio rice
with warm stock added one ladle at a time"); the rejected reply gives the key to another dish
(70%) or is a vague non-answer (30%).
Cue: ``length`` -- one extra elaborating sentence ("It has worked for me every single time.").
In this domain it sits on exactly one reply per pair: the chosen one with probability
``cue_strength`` (0.5 in ``mini``), else a random side. In the siblings (travel, techsupport) it
is appended to each response with probability ``sibling_cue_rate`` (0.5): no label there.
"""
from bench.suites.mini.domain import Domain, HelpfulBank

DOMAIN = Domain(
    name="recipes",
    category="helpful",
    cue="length",
    style="casual, lower-case cooking forum",
    bank=HelpfulBank(
        questions=(
            'how do i make {subject} at home?',
            'any tips for a good {subject}?',
            'whats the secret to great {subject}?',
            'making {subject} tonight, what matters most?',
        ),
        answers=(
            'the trick is {fact}.',
            'you want {fact}.',
            'it all comes down to {fact}.',
            'go with {fact}.',
        ),
        vague_answers=(
            'honestly it depends on taste, everyone does it a bit differently.',
            'hard to say really, there are lots of ways and most work fine.',
            'just follow whatever recipe you have and adjust it as you go.',
        ),
        topics=(
            ("guacamole", "ripe avocados mashed with lime juice and chopped cilantro"),
            ("risotto", "arborio rice with warm stock added one ladle at a time"),
            ("pesto", "fresh basil pounded with pine nuts, garlic and parmesan"),
            ("hummus", "soft chickpeas blended with tahini and lemon until smooth"),
            ("sushi", "short grain rice seasoned with rice vinegar and a very sharp knife for the fish"),
            ("omelette", "beaten eggs cooked gently in foaming butter and folded while still soft"),
            ("sourdough bread", "a lively starter and a long, slow overnight proof"),
            ("french fries", "potatoes cut evenly and fried twice, first low then very hot"),
            ("caesar salad", "crisp romaine, garlic croutons and an anchovy and egg yolk dressing"),
            ("lemonade", "freshly squeezed lemons stirred with sugar syrup and cold water"),
            ("popcorn", "kernels in a covered pot of hot oil, shaken until the popping stops"),
            ("mashed potatoes", "floury potatoes boiled soft and whipped with butter and warm cream"),
            ("tiramisu", "ladyfingers dipped in espresso and layered with mascarpone cream"),
            ("chili con carne", "ground beef and kidney beans simmered slowly with cumin and chili powder"),
            ("pizza", "a thin stretched dough, tomato sauce and mozzarella baked in a scorching oven"),
            ("thai green curry", "green paste fried in coconut cream before the rest of the coconut milk goes in"),
            ("meringue", "egg whites whisked with sugar until they hold stiff glossy peaks"),
            ("caramel", "sugar melted slowly without stirring until it turns deep amber"),
            ("a fruit smoothie", "frozen banana and berries blended with yogurt and a splash of juice"),
            ("a grilled cheese sandwich", "buttered bread and sharp cheddar in a pan over medium heat"),
            ("pot roast", "a chuck roast braised for hours with carrots, onions and stock"),
            ("falafel", "soaked raw chickpeas ground with parsley and cumin, shaped and deep fried"),
            ("apple pie", "sliced tart apples with cinnamon in a cold, flaky butter crust"),
            ("gazpacho", "ripe tomatoes, cucumber and peppers blended with olive oil and served cold"),
            ("miso soup", "dashi broth with miso paste stirred in off the boil, plus tofu and seaweed"),
            ("ramen", "springy noodles in a rich pork bone broth with a soft marinated egg"),
            ("paella", "saffron rice cooked undisturbed in a wide shallow pan with seafood"),
            ("brownies", "melted dark chocolate and butter, baked until just barely set"),
            ("cornbread", "a cornmeal and buttermilk batter poured into a hot cast iron skillet"),
            ("pickles", "small cucumbers packed in a vinegar brine with dill and garlic"),
            ("homemade yogurt", "warm milk with a spoonful of live culture left somewhere warm overnight"),
            ("strawberry jam", "crushed berries boiled hard with sugar and pectin until it sets"),
            ("a steak", "a smoking hot pan, plenty of salt and resting the meat before slicing"),
            ("fried rice", "cold day-old rice stir fried over the highest heat in a wok"),
            ("hot chocolate", "real cocoa whisked into warm milk with a pinch of salt"),
            ("coleslaw", "finely shredded cabbage and carrot in a tangy mayonnaise dressing"),
            ("dumplings", "thin wrappers filled with minced pork and ginger, pleated and steamed"),
            ("crepes", "a very thin batter swirled across a hot, lightly buttered pan"),
            ("tacos", "warm corn tortillas with seasoned meat, salsa, onion and cilantro"),
            ("lasagna", "layers of pasta sheets, slow meat sauce, bechamel and parmesan"),
            ("iced tea", "black tea brewed strong, sweetened while hot and poured over ice"),
            ("granola", "oats tossed with honey, oil and nuts, baked low until golden and crisp"),
            ("banana bread", "very ripe spotty bananas mashed into a simple quick batter"),
            ("french onion soup", "onions caramelised for an hour, beef stock and a cheesy toast on top"),
        ),
    ),
)
